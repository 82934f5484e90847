/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The gate: sbxd's listening sockets and every connection's life outside a request.
 *
 * libmicrohttpd runs a thread per connection (handlers block: proxy streams, queued creates,
 * SSE, the terminal). The gate keeps threads for requests in progress only:
 *
 *   - one epoll thread accepts and holds each new connection with no thread until a whole
 *     request head is in its socket (peeked, not read), at most GATE_HEAD_MAX bytes, within
 *     GATE_HEAD_MS of the accept; then checks the head's framing (http/framing.h) and hands
 *     the socket to libmicrohttpd (MHD_add_connection). A head too large answers 431, a late
 *     one 408 (a connection that sent nothing is just closed), a bad framing 400/501; all
 *     close the connection;
 *   - at most `max_pending` connections wait for their head; a new one past that evicts the
 *     oldest waiting one (a real client sends its head in milliseconds, so a flood of slow
 *     connections cannot lock it out);
 *   - at most `max_active` connections are in libmicrohttpd (threads; sbxd's
 *     --max-connections, default 1024); a head arriving at that bound first makes room (the
 *     longest-idle keep-alive connection is closed, else the slowest body already below
 *     GATE_BODY_MIN_RATE), and without any is answered 503 with Retry-After and closed;
 *   - the same thread watches the connections in libmicrohttpd (their state is set by
 *     front.c through gate_conn_*()): idle after a response for GATE_IDLE_MS (GATE_BUSY_IDLE_MS
 *     when more than 3/4 of max_active are in use), a later head not complete within
 *     GATE_HEAD_MS, or a request body below GATE_BODY_MIN_RATE bytes/s after
 *     GATE_BODY_GRACE_MS (time spent in sbxd's own handlers not counted) or with no byte for
 *     GATE_BODY_STALL_MS: the connection is cut (408 for a head or a body). A response in
 *     progress is never cut by the gate, however long it is silent;
 *   - an upgraded connection (GATE_UPGRADED) libmicrohttpd closes gets a lingering close, as
 *     the gate's own answers do: at the CLOSED notification the gate takes a descriptor of
 *     its own, shuts the write side (what is queued, TLS's close_notify included, then FIN)
 *     and drains the client's input until its end or GATE_LINGER_MS, so input libmicrohttpd
 *     left unread does not turn the close into a reset.
 */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define GATE_HEAD_MS  5000  /* accept (a later request: its request line) → whole head */
#define GATE_HEAD_MAX 32768 /* request line + headers, bytes; past it: 431 */
/* keep-alive idle after a response: responses say Keep-Alive: timeout=5, so clients stop
 * reusing the connection before (httpx's own expiry is 5 s) */
#define GATE_IDLE_MS       6000
#define GATE_BUSY_IDLE_MS  1000  /* the same past 3/4 of max_active */
#define GATE_BODY_GRACE_MS 5000  /* a body's first seconds, free */
#define GATE_BODY_MIN_RATE 1024  /* then at least this many bytes/s on average */
#define GATE_BODY_STALL_MS 10000 /* and never this long without a byte */
/* after the gate's own answer or an upgraded connection's end: input drained, then closed */
#define GATE_LINGER_MS   2000
#define GATE_MIN_PENDING 256 /* max_pending: RLIMIT_NOFILE / 4 within these bounds */
#define GATE_MAX_PENDING 16384
#define GATE_MAX_LISTEN  8

struct gate;
struct gate_conn;

/* Connection states in libmicrohttpd, as front.c reports them. */
enum gate_state {
        GATE_HEAD,     /* a request head being read */
        GATE_BODY,     /* its body being read */
        GATE_RESPONSE, /* handled / answered: never cut */
        GATE_IDLE,     /* between requests (keep-alive) */
        GATE_UPGRADED, /* handed over after a 101 (a WebSocket): never cut, closed by its relay */
};

/* Raise RLIMIT_NOFILE's soft limit to the hard one; returns the soft limit now in force. */
unsigned gate_raise_nofile(void);

/* Listen on addrs (bound now: a port 0 is chosen here and returned in ret_ports[i]), with no
 * thread started yet; max_active: connections in libmicrohttpd at most. */
int gate_new(const struct sockaddr_storage *addrs, const socklen_t *addr_lens, size_t n,
             unsigned max_active, struct gate **ret, uint16_t *ret_ports);
/* What the MHD daemon's MHD_OPTION_CONNECTION_LIMIT must be (above max_active). */
unsigned gate_mhd_connection_limit(const struct gate *g);
/* The connections are TLS (--tls-cert): each is handed over at its first byte, unread (its head
 * is encrypted; libmicrohttpd reads it, and the gate's GATE_HEAD_MS deadline runs from then),
 * and a cut sends no plaintext answer. Before gate_start(). */
void gate_set_opaque(struct gate *g);
/* Start accepting and handing connections to d (started with MHD_USE_NO_LISTEN_SOCKET and
 * gate_notify_connection() as its MHD_OPTION_NOTIFY_CONNECTION). */
int gate_start(struct gate *g, struct MHD_Daemon *d);
/* Stop accepting: the listening sockets are closed, waiting connections closed, the
 * counters logged; connections in libmicrohttpd go on (no longer watched). */
void gate_quiesce(struct gate *g);
/* Stop the thread and free (after MHD_stop_daemon: no connection is left). NULL: nothing. */
void gate_free(struct gate *g);

/* MHD_OPTION_NOTIFY_CONNECTION (cls: the gate). */
void gate_notify_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode toe);

/* From front.c, in the connection's own thread. gc: gate_conn_of(conn) (NULL: ignored). */
struct gate_conn *gate_conn_of(struct MHD_Connection *conn);
void gate_conn_set(struct gate_conn *gc, enum gate_state st);
/* Around every call of the access handler: time inside is sbxd's, not the client's.
 * body_bytes: what this call consumed; next: the state after it. */
void gate_conn_enter(struct gate_conn *gc);
void gate_conn_leave(struct gate_conn *gc, size_t body_bytes, enum gate_state next);
