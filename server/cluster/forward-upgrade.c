/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/forward-upgrade.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel/agent-req.h"
#include "http/upgrade.h"
#include "fd-util.h"
#include "log.h"
#include "macros.h"
#include "time-util.h"

static unsigned active;

bool forward_upgrade_reserve(void)
{
        unsigned n = __atomic_load_n(&active, __ATOMIC_RELAXED);
        do {
                if (n >= FORWARD_UPGRADE_MAX)
                        return false;
        } while (!__atomic_compare_exchange_n(&active, &n, n + 1, false, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED));
        return true;
}

void forward_upgrade_unreserve(void)
{
        __atomic_sub_fetch(&active, 1, __ATOMIC_RELAXED);
}

unsigned forward_upgrade_active(void)
{
        return __atomic_load_n(&active, __ATOMIC_RELAXED);
}

struct forward_splice {
        unsigned refs;          /* the request's and the splice's (__atomic) */
        struct http_upgrade up; /* up.started: the splice holds its reference */
        struct owner_conn *c;
};

/* Both ways until both ends closed their side, an error, the idle bound, or sbxd stops. */
static void splice_relay(struct forward_splice *s)
{
        int fds[2] = {s->up.sock, s->c->fd}; /* from: 0 the client, 1 the owner */
        bool open_in[2] = {true, true};
        _cleanup_free_ char *buf = malloc(FORWARD_UPGRADE_CHUNK);
        if (!buf)
                return;
        (void)fcntl(s->up.sock, F_SETFL, fcntl(s->up.sock, F_GETFL) | O_NONBLOCK);
        /* what each side sent before the splice: the client's bytes MHD read past the head,
         * the owner's bytes read past its 101 */
        if ((s->up.extra_len > 0 &&
             send_all_wait(fds[1], s->up.extra, s->up.extra_len, FORWARD_UPGRADE_SEND_MS) < 0) ||
            (s->c->len > 0 &&
             send_all_wait(fds[0], s->c->buf + s->c->off, s->c->len, FORWARD_UPGRADE_SEND_MS) < 0))
                return;
        s->c->len = 0;
        int64_t last = now_ms();
        while ((open_in[0] || open_in[1]) && !agent_req_stopping()) {
                struct pollfd p[2] = {{.fd = open_in[0] ? fds[0] : -1, .events = POLLIN},
                                      {.fd = open_in[1] ? fds[1] : -1, .events = POLLIN}};
                int n = poll(p, 2, AGENT_WAIT_TICK_MS);
                if (n < 0 && errno != EINTR)
                        return;
                if (n <= 0) {
                        if (now_ms() - last > FORWARD_UPGRADE_IDLE_MS) {
                                log_info("%s: upgraded relay idle %d s: closed", s->up.name,
                                         FORWARD_UPGRADE_IDLE_MS / 1000);
                                return;
                        }
                        continue;
                }
                for (int i = 0; i < 2; i++) {
                        if (!p[i].revents)
                                continue;
                        ssize_t k = recv(fds[i], buf, FORWARD_UPGRADE_CHUNK, MSG_DONTWAIT);
                        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (k < 0)
                                return; /* a reset: the other side is closed with it */
                        if (k == 0) {
                                open_in[i] = false; /* passed on as a half-close */
                                (void)shutdown(fds[1 - i], SHUT_WR);
                                continue;
                        }
                        last = now_ms();
                        if (send_all_wait(fds[1 - i], buf, (size_t)k, FORWARD_UPGRADE_SEND_MS) < 0)
                                return;
                }
        }
}

static void splice_unref(struct forward_splice *s)
{
        if (__atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return;
        owner_conn_release(s->c, false);
        free(s);
        forward_upgrade_unreserve();
}

static void splice_run(struct http_upgrade *up)
{
        struct forward_splice *s = up->userdata;
        splice_relay(s);
        log_debug("%s: upgraded forward ended", s->up.name);
}

static void splice_done(struct http_upgrade *up)
{
        splice_unref(up->userdata);
}

void forward_upgrade_drop(struct forward_splice *s)
{
        if (!s)
                return;
        /* never handed over (the 101 did not go out): the splice's reference goes too. On
         * the connection's thread, as the upgrade callback (http/upgrade.c): the two never
         * run at once. */
        if (!s->up.started)
                __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL);
        splice_unref(s);
}

static void splice_free(struct forward_splice *s)
{
        s->refs = 1;
        splice_unref(s);
}

int forward_upgrade_queue(struct request *req, struct owner_conn *c, const struct owner_head *h,
                          struct forward_splice **ret)
{
        *ret = NULL;
        struct forward_splice *s = calloc(1, sizeof(*s));
        if (s)
                s->up = (struct http_upgrade){
                    .userdata = s,
                    .run = splice_run,
                    .done = splice_done,
                    .stack = FORWARD_UPGRADE_STACK,
                };
        struct MHD_Response *resp = s ? http_upgrade_response(&s->up) : NULL;
        if (!resp) {
                free(s);
                owner_conn_release(c, false);
                forward_upgrade_unreserve();
                return -ENOMEM;
        }
        s->c = c;
        snprintf(s->up.name, sizeof(s->up.name), "req=%s", req->rid);
        for (size_t i = 0; i < h->n_headers; i++) {
                if (http_upgrade_relay_header(resp, h->headers[i].name, h->headers[i].value) < 0) {
                        MHD_destroy_response(resp);
                        splice_free(s);
                        return -EPROTO;
                }
        }
        s->refs = 2; /* on_upgrade runs on this thread once the handler returned */
        int r = http_queue(req, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
        MHD_destroy_response(resp);
        if (r < 0) {
                splice_free(s);
                return r;
        }
        *ret = s;
        return r;
}
