/* SPDX-License-Identifier: Apache-2.0 */
#include "core/server.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "fd-util.h"
#include "log.h"
#include "macros.h"
#include "thread-util.h"
#include "time-util.h"

#define THREAD_STACK_SIZE (512u * 1024u)
#define HEAD_TIMEOUT_S    30
#define NOT_FOUND_DRAIN   (16u * 1024u * 1024u)

static const struct agent_route_table *routes;
static atomic_int active_connections;
static atomic_int user_connections; /* of those, to user ports (AGENT_USER_PORT_CONNECTIONS) */

struct conn_slot {
        int fd;
        bool slot_held;
};

void agent_server_set_routes(const struct agent_route_table *t)
{
        routes = t;
}

/* ---- core's own handlers ---- */

int agent_handle_health(struct agent_request *r)
{
        int e = agent_request_discard_body(r, 64 * 1024);
        if (e < 0)
                return e;
        return agent_respond(r, 204, NULL, NULL, 0);
}

int agent_handle_not_found(struct agent_request *r)
{
        int e = agent_request_discard_body(r, NOT_FOUND_DRAIN);
        if (e < 0 && e != -EMSGSIZE)
                return e;
        return agent_respond_rest_error(r, 404, "no route for %s %s", r->head.method, r->head.path);
}

/* ---- one connection ---- */

static int set_recv_timeout(int fd, int seconds)
{
        struct timeval tv = {.tv_sec = seconds};
        return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ? -errno : 0;
}

/* Read and decode the REQ_HEAD into r->head and pick its route. */
static int read_head(struct agent_request *r)
{
        uint8_t type;
        uint32_t len;
        int e;

        e = sbx_frame_read(r->fd, &type, r->frame_buf, &len);
        if (e < 0)
                return e;
        if (type != SBX_FRAME_REQ_HEAD)
                return -EPROTO;
        e = sbx_req_head_decode(r->frame_buf, len, &r->head);
        if (e < 0)
                return e;
        r->route = agent_route_find(routes, r->head.port, r->head.method, r->head.path,
                                    agent_request_is_stream(r));
        return 0;
}

static void log_result(const struct agent_request *r, int result, int64_t start_ms)
{
        int64_t ms = now_ms() - start_ms;

        if (result >= 0 && (!r->resp_started || result != r->status))
                log_warning("port %u %s \"%s\": handler returned %d, answered %d",
                            (unsigned)r->head.port, r->head.method, r->head.path, result,
                            r->resp_started ? r->status : 0);
        else if (result >= 0)
                log_debug("port %u %s \"%s\": %d in %lld ms", (unsigned)r->head.port,
                          r->head.method, r->head.path, result, (long long)ms);
        else if (result != -EPIPE && result != -ECONNRESET)
                log_debug("port %u %s \"%s\": %s (answered %d) in %lld ms", (unsigned)r->head.port,
                          r->head.method, r->head.path, strerror(-result),
                          r->resp_started ? r->status : 0, (long long)ms);
}

int agent_server_serve(int fd)
{
        struct agent_request r = {.fd = fd};
        int64_t start;
        int e;

        r.frame_buf = malloc(SBX_FRAME_MAX_PAYLOAD);
        if (!r.frame_buf) {
                e = -ENOMEM;
                goto out;
        }
        /* sbxd sends the head right after connecting; a silent peer must not hold a slot. */
        (void)set_recv_timeout(fd, HEAD_TIMEOUT_S);
        e = read_head(&r);
        if (e < 0)
                goto out;
        (void)set_recv_timeout(fd, 0);
        bool user = r.head.port != SBX_PORT_INTERNAL && r.head.port != SBX_PORT_ENVD &&
                    r.head.port != SBX_PORT_CODE;
        if (user && atomic_fetch_add(&user_connections, 1) >= AGENT_USER_PORT_CONNECTIONS) {
                atomic_fetch_sub(&user_connections, 1);
                e = agent_respond_rest_error(&r, 503,
                                             "agent busy: too many connections to the sandbox's "
                                             "ports (the rest are kept for envd)");
                goto out;
        }
        start = now_ms();
        if (r.route)
                e = r.route->handler(&r);
        else if (routes && routes->not_found)
                e = routes->not_found(&r);
        else
                e = agent_handle_not_found(&r);
        log_result(&r, e, start);
        if (user)
                atomic_fetch_sub(&user_connections, 1);
out:
        sbx_req_head_free(&r.head);
        free(r.frame_buf);
        safe_close(fd);
        return e;
}

/* ---- connection threads ---- */

static __thread struct conn_slot *current_slot;

void agent_server_release_slot(struct agent_request *r)
{
        if (current_slot && current_slot->slot_held) {
                current_slot->slot_held = false;
                atomic_fetch_sub(&active_connections, 1);
        }
}

static void *conn_thread(void *arg)
{
        struct conn_slot *slot = arg;

        current_slot = slot;
        (void)agent_server_serve(slot->fd);
        agent_server_release_slot(NULL);
        current_slot = NULL;
        free(slot);
        return NULL;
}

/* Called from the init loop: never block it on a peer that does not read or write. The head
 * is usually in the socket already (sbxd writes it right after connecting); when it is, the
 * refusal takes the error shape of the route it was meant for (the native API's for /v1/). */
static void answer_busy(int fd)
{
        struct agent_request r = {.fd = fd};

        (void)fd_set_nonblock(fd, 1);
        r.frame_buf = malloc(SBX_FRAME_MAX_PAYLOAD);
        if (r.frame_buf && read_head(&r) < 0)
                r.route = NULL;
        (void)agent_respond_rest_error(&r, 503, "agent busy: too many connections");
        sbx_req_head_free(&r.head);
        free(r.frame_buf);
        safe_close(fd);
}

void agent_server_spawn(int fd)
{
        struct conn_slot *slot;

        if (atomic_fetch_add(&active_connections, 1) >= AGENT_MAX_CONNECTIONS) {
                atomic_fetch_sub(&active_connections, 1);
                answer_busy(fd);
                return;
        }
        slot = malloc(sizeof(*slot));
        if (!slot)
                goto fail;
        *slot = (struct conn_slot){.fd = fd, .slot_held = true};
        if (thread_start_detached(conn_thread, slot, THREAD_STACK_SIZE) < 0) {
                free(slot);
                goto fail;
        }
        return;
fail:
        atomic_fetch_sub(&active_connections, 1);
        answer_busy(fd);
}
