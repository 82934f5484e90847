/* SPDX-License-Identifier: Apache-2.0 */
#include "channel/agent-upgrade.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fd-util.h"
#include "log.h"
#include "macros.h"
#include "time-util.h"

/* The relay: both sockets blocking, polled (a write to the client waits AGENT_UPGRADE_SEND_MS
 * at most for room); every AGENT_WAIT_TICK_MS the stop flag is looked at
 * (agent_req_stopping()). Once the client stopped writing, or the agent stopped taking what
 * it writes, the agent's END is waited for AGENT_UPGRADE_LINGER_MS at most (a server that
 * never closes would hold the relay); what the agent sent until then goes to the client. A
 * client whose connection was reset ends it at once. */
static void relay(struct agent_req *q, int sock, const char *extra, size_t extra_len)
{
        _cleanup_free_ uint8_t *buf = malloc(AGENT_UPGRADE_CHUNK);
        bool client_open = true;
        int64_t linger_end = 0;

        (void)fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) & ~O_NONBLOCK);
        if (!buf || agent_req_set_timeouts(q, 0, AGENT_UPGRADE_SEND_MS) < 0)
                return;
        if (extra_len > 0 && agent_req_send(q, extra, extra_len) < 0)
                return;
        while (!agent_req_stopping() && (!linger_end || now_ms() < linger_end)) {
                struct pollfd p[2] = {{.fd = client_open ? sock : -1, .events = POLLIN},
                                      {.fd = agent_req_fd(q), .events = POLLIN}};
                int n = poll(p, 2, AGENT_WAIT_TICK_MS);
                if (n < 0 && errno != EINTR)
                        return;
                if (n <= 0)
                        continue;
                if (p[0].revents) {
                        ssize_t k = recv(sock, buf, AGENT_UPGRADE_CHUNK, 0);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0)
                                return; /* a reset: nothing reaches the client any more */
                        if (k > 0 && agent_req_send(q, buf, (size_t)k) < 0) {
                                /* the agent took no more (the server in the sandbox closed
                                 * and the agent went): what it sent before still goes to the
                                 * client, up to its END */
                                client_open = false;
                                linger_end = now_ms() + AGENT_UPGRADE_LINGER_MS;
                        } else if (k == 0) {
                                client_open = false; /* the agent still may answer */
                                linger_end = now_ms() + AGENT_UPGRADE_LINGER_MS;
                                if (agent_req_end(q) < 0)
                                        return;
                        }
                }
                if (p[1].revents) {
                        const uint8_t *d;
                        uint32_t len;
                        if (agent_req_next(q, &d, &len) <= 0 ||
                            send_all_wait(sock, d, len, AGENT_UPGRADE_SEND_MS) < 0)
                                return;
                }
        }
}

static void relay_run(struct agent_upgraded *u)
{
        relay(u->q, u->up.sock, u->up.extra, u->up.extra_len);
        log_debug("%s: upgraded connection ended", u->up.name);
}

static void upgraded_run(struct http_upgrade *up)
{
        struct agent_upgraded *u = up->userdata;
        u->run(u);
}

static void upgraded_done(struct http_upgrade *up)
{
        struct agent_upgraded *u = up->userdata;
        agent_req_free(u->q);
        if (u->done)
                u->done(u->done_arg);
        free(u);
}

struct MHD_Response *agent_upgrade_response(void (*run)(struct agent_upgraded *u), const char *name,
                                            struct agent_upgraded **ret_u)
{
        struct agent_upgraded *u = calloc(1, sizeof(*u));
        if (!u)
                return NULL;
        u->up = (struct http_upgrade){
            .userdata = u,
            .run = upgraded_run,
            .done = upgraded_done,
            .stack = AGENT_UPGRADE_STACK,
        };
        snprintf(u->up.name, sizeof(u->up.name), "%s", name);
        u->run = run;
        struct MHD_Response *resp = http_upgrade_response(&u->up);
        if (!resp) {
                free(u);
                return NULL;
        }
        *ret_u = u;
        return resp;
}

int agent_mhd_upgrade(struct request *req, struct agent_req **q, const struct sbx_resp_head *h,
                      void (*done)(void *arg), void *done_arg)
{
        _cleanup_agent_req_ struct agent_req *own = TAKE_PTR(*q);
        char name[ROUTE_ID_MAX];
        struct agent_upgraded *u = NULL;
        snprintf(name, sizeof(name), "req=%s", req->rid);
        struct MHD_Response *resp = agent_upgrade_response(relay_run, name, &u);
        if (!resp)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_headers; i++) {
                if (http_upgrade_relay_header(resp, h->headers[i].name, h->headers[i].value) < 0) {
                        MHD_destroy_response(resp);
                        free(u);
                        return -EPROTO;
                }
        }
        u->q = TAKE_PTR(own);
        u->done = done;
        u->done_arg = done_arg;
        return agent_upgrade_queue(req, u, resp);
}

int agent_upgrade_queue(struct request *req, struct agent_upgraded *u, struct MHD_Response *resp)
{
        int r = http_upgrade_queue(req, &u->up, resp);
        MHD_destroy_response(resp);
        if (r < 0) { /* nothing queued: what done() would release stays the caller's */
                agent_req_free(u->q);
                free(u);
        }
        return r;
}
