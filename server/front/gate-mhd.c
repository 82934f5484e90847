/* SPDX-License-Identifier: Apache-2.0 */
/* The gate's side in libmicrohttpd's threads: a connection's state as front.c reports it, and
 * its end (MHD_OPTION_NOTIFY_CONNECTION), where an upgraded one goes back to the gate's thread
 * for a lingering close (front/gate.h). */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "front/gate-int.h"
#include "time-util.h"

/* An upgraded connection libmicrohttpd is about to close: c takes a socket of its own (a dup,
 * so libmicrohttpd's close() of its descriptor no longer ends the connection) and shuts its
 * write side, which sends what is still queued (under TLS, the close_notify MHD has just
 * written), then FIN. libmicrohttpd stops reading a client once the relay has ended: what the
 * client sent since (its last frames, its TLS close_notify) would still be unread in the
 * socket, and a close() with unread input makes the kernel reset the connection instead of
 * ending it, dropping sbxd's queued bytes with it; the client then reads ECONNRESET (and may
 * lose the last frames). The gate's thread drains it and closes it once the client has
 * ended its side, or after GATE_LINGER_MS (take_back()). false: no descriptor left. */
static bool keep_open(struct gate_conn *c)
{
        int fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0)
                return false;
        (void)shutdown(fd, SHUT_WR);
        c->fd = fd;
        return true;
}

void gate_notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe)
{
        struct gate *g = cls;
        if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
                struct gate_conn *c = *socket_context;
                if (!c)
                        return;
                *socket_context = NULL;
                pthread_mutex_lock(&g->lock);
                if ((unsigned)c->fd < g->n_fds && g->by_fd[c->fd] == c)
                        g->by_fd[c->fd] = NULL;
                list_del(&g->active, c);
                if (c->cut)
                        g->n_cut--;
                c->cut = false;
                bool back = g->take_back &&
                            __atomic_load_n(&c->state, __ATOMIC_RELAXED) == GATE_UPGRADED &&
                            keep_open(c);
                if (back)
                        list_add(&g->back, c);
                pthread_mutex_unlock(&g->lock);
                if (back) {
                        uint64_t one = 1;
                        (void)!write(g->back_fd, &one, sizeof(one));
                } else {
                        free(c);
                }
                return;
        }
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        int fd = ci ? ci->connect_fd : -1;
        int64_t now = now_ms();
        pthread_mutex_lock(&g->lock);
        struct gate_conn *c = fd >= 0 && (unsigned)fd < g->n_fds ? g->by_fd[fd] : NULL;
        if (!c || __atomic_load_n(&c->state, __ATOMIC_RELAXED) != C_HANDED) {
                /* the gate dropped it as stale: track it afresh */
                c = calloc(1, sizeof(*c));
                if (c) {
                        c->g = g;
                        c->fd = fd;
                        list_add(&g->active, c);
                        gate_by_fd_set(g, fd, c);
                }
        }
        if (c) {
                __atomic_store_n(&c->t_state, now, __ATOMIC_RELAXED);
                __atomic_store_n(&c->state, GATE_HEAD, __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&g->lock);
        *socket_context = c;
}

struct gate_conn *gate_conn_of(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return ci ? ci->socket_context : NULL;
}

void gate_conn_set(struct gate_conn *gc, enum gate_state st)
{
        if (!gc)
                return;
        __atomic_store_n(&gc->t_state, now_ms(), __ATOMIC_RELAXED);
        __atomic_store_n(&gc->state, (int)st, __ATOMIC_RELAXED);
}

void gate_conn_enter(struct gate_conn *gc)
{
        if (!gc)
                return;
        if (__atomic_load_n(&gc->state, __ATOMIC_RELAXED) == GATE_BODY)
                __atomic_add_fetch(&gc->wait_ms,
                                   now_ms() - __atomic_load_n(&gc->t_mark, __ATOMIC_RELAXED),
                                   __ATOMIC_RELAXED);
        __atomic_store_n(&gc->in_handler, true, __ATOMIC_RELAXED);
}

void gate_conn_leave(struct gate_conn *gc, size_t body_bytes, enum gate_state next)
{
        if (!gc)
                return;
        int64_t now = now_ms();
        int prev = __atomic_load_n(&gc->state, __ATOMIC_RELAXED);
        if (next == GATE_BODY && prev != (int)GATE_BODY) {
                /* the body starts now */
                __atomic_store_n(&gc->wait_ms, 0, __ATOMIC_RELAXED);
                __atomic_store_n(&gc->body_bytes, 0, __ATOMIC_RELAXED);
        }
        __atomic_add_fetch(&gc->body_bytes, body_bytes, __ATOMIC_RELAXED);
        __atomic_store_n(&gc->t_mark, now, __ATOMIC_RELAXED);
        if ((int)next != prev)
                gate_conn_set(gc, next);
        __atomic_store_n(&gc->in_handler, false, __ATOMIC_RELAXED);
}
