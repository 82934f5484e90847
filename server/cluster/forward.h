/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Forwarding a request to the node that owns its sandbox: a plain HTTP/1.1 relay to the
 * owner's advertised address, streaming both ways, run in the request's own libmicrohttpd
 * thread over a pooled connection (cluster/owner-conn.h; no thread, pipe or copy of its own).
 * The request's head goes as it came (method, raw target, headers but hop-by-hop ones, Host and
 * E2b-Sandbox-* included) plus CLUSTER_HOP_HEADER, which makes the owner answer locally; the
 * body is written to the owner as libmicrohttpd hands it over (the head with its first piece);
 * the answer's status and headers come back before its body, which the client's response
 * callback reads from the owner's socket by its framing. A client that hangs up is noticed
 * while the owner is silent, before or during the answer's body: the owner's connection is
 * closed. An upgrade (Connection: Upgrade) gets a connection of its own and, after the owner's
 * 101, is spliced both ways (cluster/forward-upgrade.h). The buffered calls (placed creates,
 * list fan-out) use libcurl: they are small, whole, and not on a latency path.
 */
#pragma once

#include <stddef.h>

#include "http/http.h"

#define CLUSTER_HOP_HEADER   "Sbx-Cluster-Hop"
#define FORWARD_CONNECT_MS   2000        /* buffered calls (the relay: OWNER_CONNECT_MS) */
#define FORWARD_REPLAY_MAX   (64 * 1024) /* sent again once when a reused connection was closed */
#define FORWARD_POOL_MAX     64          /* idle curl handles (buffered calls) kept for reuse */
#define FORWARD_REUSE_IDLE_S 3 /* below the gate's idle close (front/gate.h GATE_IDLE_MS) */
#define FORWARD_BUFFERED_MAX (1024 * 1024) /* a buffered answer (a create, a list page) */

/* First call: start forwarding req to addr ("host:port"). Sets req->state. Returns 0 (wants
 * the body) or a status/-errno. */
int forward_begin(struct request *req, const char *addr, const char *node);
int forward_upload(struct request *req, const char *data, size_t len);
/* Last call: wait for the owner's answer head and queue the streamed answer. */
int forward_finish(struct request *req);

/* The answer for a sandbox whose node is lost (its lease expired, or it does not answer):
 * 503 in the shape of the API the request was for: a Connect error (code failed_precondition,
 * which the SDKs pass on with its message) for Connect traffic, the native error for /v1, else
 * E2B's {code, message}. The message starts with "node lost". */
int forward_reply_lost(struct request *req, const char *node, const char *why);

/* A whole request, buffered both ways (creates placed elsewhere, list fan-out): method, the
 * request target, the request's own headers (req, may be NULL: only X-API-KEY given) and body.
 * *ret_status 0 when the node did not answer. */
struct forward_answer {
        long status;
        char *body;
        size_t len;
        char *content_type, *next_token, *retry_after, *total_running;
};
int forward_buffered(struct request *req, const char *addr, const char *method, const char *target,
                     const char *body, size_t len, struct forward_answer *ret);
void forward_answer_done(struct forward_answer *a);
/* forward_buffered() of req itself: its method, target and buffered body (BODY_BUFFERED). */
int forward_buffered_body(struct request *req, const char *addr, struct forward_answer *ret);
/* Answer req with a as the node answered it (status, body, Content-Type, else
 * application/json, and Retry-After), then free a. Returns the status queued. */
int forward_reply_answer(struct request *req, struct forward_answer *a);
