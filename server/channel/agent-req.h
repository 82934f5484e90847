/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One request to a sandbox's agent over the frame channel (api/frames.md), sbxd's side. Every
 * caller that talks to an agent goes through this: the sandbox proxy (e2b/proxy.c), the /v1
 * relay (native/v1-relay.c), the terminal (native/ws-terminal.c), MCP's host side
 * (native/mcp-host.c) and agent_call_internal() (channel/agent-client.c).
 *
 *   agent_req_open()       connect (a new connection per request) and send the REQ_HEAD
 *   agent_req_send()       body bytes, cut into DATA frames of at most SBX_FRAME_MAX_PAYLOAD
 *   agent_req_end()        END
 *   agent_req_read_head()  wait for and decode the answer's RESP_HEAD
 *   agent_req_next()       the answer's next DATA frame, 0 at END
 *   agent_req_read_body()  the rest of the answer into a buffer, at most max bytes
 *   agent_mhd_respond()    (channel/agent-mhd.c) stream the answer to the HTTP client
 *
 * Nothing here looks inside a body: the agent is untrusted, sbxd reads only framing, and
 * every read is bounded (a frame by SBX_FRAME_MAX_PAYLOAD, a buffered body by its caller's
 * max).
 *
 * Waiting: a read first waits for the agent, giving up when the HTTP client hangs up or sbxd
 * stops (-ECONNABORTED, agent_req_watch_client()), when a cancel flag is set
 * (-ECANCELED) or a deadline passes (-ETIMEDOUT, agent_req_watch_cancel()). With none of
 * these the socket timeouts alone bound a read (-ETIMEDOUT too).
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "frame.h"

#define AGENT_WAIT_TICK_MS   1000 /* how often a wait looks at the stop flag */
#define AGENT_CANCEL_TICK_MS 100  /* ... and at a cancel flag (MCP's notifications/cancelled) */
#define AGENT_DRAIN_FRAMES   64   /* a body that must be empty: frames read before giving up */

struct agent_req_opts {
        int timeout_ms;       /* send/receive timeout on the socket (0: none) */
        int connect_retry_ms; /* retry a refused connect this long (0: once): a starting agent;
                               * timeout_ms then counts from the first try (>= 1 s is left) */
        bool duplex;          /* both directions at once (the terminal): sending never stops
                               * because the answer has started */
        bool count_bytes;     /* feed stats_count_proxy_bytes() with the body bytes */
};

/* A request head with at most one header (Content-Type), for sbxd's own calls. */
struct agent_head {
        struct sbx_req_head h;
        struct sbx_header content_type;
};
/* content_type and query may be NULL. The strings are not copied. */
void agent_head_init(struct agent_head *a, uint16_t port, const char *method, const char *path,
                     const char *query, const char *content_type);

struct agent_req;

/* Connect to <sandbox_dir>/agent.sock and send head. -errno (the connect's: -ECONNREFUSED or
 * -ENOENT when nobody listens; -EINVAL: the head does not encode). */
int agent_req_open(const char *sandbox_dir, const struct sbx_req_head *head,
                   const struct agent_req_opts *o, struct agent_req **ret);
/* The same on a connected socket (taken, closed on failure too): tests and socketpairs. */
int agent_req_open_fd(int fd, const struct sbx_req_head *head, const struct agent_req_opts *o,
                      struct agent_req **ret);
void agent_req_free(struct agent_req *q);
static inline void agent_req_freep(struct agent_req **q)
{
        agent_req_free(*q);
}
#define _cleanup_agent_req_ _cleanup_(agent_req_freep)

/* Reads give up when client_fd (a socket, polled for hangup only; < 0: none) is hung up or
 * sbxd is stopping (agent_req_shutdown()): -ECONNABORTED. */
void agent_req_watch_client(struct agent_req *q, int client_fd);
/* Make every watched read give up (within AGENT_WAIT_TICK_MS) so the HTTP daemon can stop. */
void agent_req_shutdown(void);
/* Whether agent_req_shutdown() was called (a relay loop of its own looks at it). */
bool agent_req_stopping(void);
/* Reads give up when *cancel (may be NULL) is set (-ECANCELED) or deadline_ms (now_ms()
 * time, 0: none) passes (-ETIMEDOUT). */
void agent_req_watch_cancel(struct agent_req *q, const atomic_bool *cancel, int64_t deadline_ms);

/* Send body bytes as DATA frames. Unless duplex, the agent may answer before it has read
 * everything (api/frames.md): once its answer is waiting, or the socket stays full for the
 * timeout, this stops with -ECANCELED instead of blocking. After any error the request sends
 * nothing more (agent_req_send() and agent_req_end() return that error again); the answer can
 * still be read. */
int agent_req_send(struct agent_req *q, const void *data, size_t len);
/* END of the request body (nothing when sending already stopped). */
int agent_req_end(struct agent_req *q);
/* Whether sending stopped (an error, or the agent answered early). */
bool agent_req_send_stopped(const struct agent_req *q);

/* Wait for and decode the RESP_HEAD. -EPROTO for another frame or a bad head. *ret is written
 * on success only and then owned by the caller (sbx_resp_head_free()). */
int agent_req_read_head(struct agent_req *q, struct sbx_resp_head *ret);
/* The next DATA frame of the answer: 1 with *ret_data and *ret_len (valid until the next call), 0
 * at END, -errno (-EPROTO for any other frame). */
int agent_req_next(struct agent_req *q, const uint8_t **ret_data, uint32_t *ret_len);
/* Append the rest of the answer to *ret up to END (buf_str() is its text): -EMSGSIZE past max
 * bytes. */
int agent_req_read_body(struct agent_req *q, size_t max, struct buf *ret);
/* Read an answer body that must be empty (204, 304, HEAD) up to END: -EPROTO past
 * AGENT_DRAIN_FRAMES frames. */
int agent_req_drain(struct agent_req *q);

/* The connection, to poll it (the terminal; MCP's cancel wait). Still owned by q. */
int agent_req_fd(const struct agent_req *q);
/* Change the socket timeouts (ms, 0 = none) for reads and writes. */
int agent_req_set_timeouts(struct agent_req *q, int recv_ms, int send_ms);

/* Content-Length of an answer head: UINT64_MAX when absent, -EPROTO when invalid. */
int agent_resp_content_length(const struct sbx_resp_head *h, uint64_t *ret);

/* open + the whole body + END + head + a body of at most max bytes: one bounded call. Returns
 * the agent's status (the head's headers are dropped but Content-Type, copied into
 * ret_content_type when not NULL, cut at its size), -errno. */
int agent_req_call(const char *sandbox_dir, const struct sbx_req_head *head, const void *body,
                   size_t len, size_t max, const struct agent_req_opts *o, struct buf *ret_body,
                   char *ret_content_type, size_t content_type_size);
