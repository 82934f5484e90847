/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP front end on libmicrohttpd: one thread per connection (so handlers may block on an
 * agent socket), bounded connections, idle timeout, bounded control-plane bodies.
 *
 * Per-request context: allocated in MHD's URI-log callback (the first thing MHD calls for a
 * request, and the only place the raw request target — with its still-encoded query — is
 * visible), handed to the access handler as *req_cls, freed in the NOTIFY_COMPLETED callback
 * and nowhere else.
 */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "macros.h"
#include "http/route.h"
#include "core/server.h"

#define HTTP_MAX_CONNECTIONS        1024 /* each is a thread (thread per connection) */
#define HTTP_MAX_CONNECTIONS_PER_IP 512  /* an SDK host driving hundreds of sandboxes */
#define HTTP_IDLE_TIMEOUT_S         120
#define HTTP_CONN_MEMORY            (512 * 1024)
#define HTTP_MAX_CONTROL_BODY       (1024 * 1024)
/* An oversized chunked body is read and dropped up to this much, then the connection is cut. */
#define HTTP_MAX_DISCARD (16 * 1024 * 1024)

struct proxy_conn;
struct v1_conn;

struct request {
        struct server *srv;
        struct MHD_Connection *conn;
        char rid[17];
        char *target;        /* raw request target, e.g. "/files?path=%2Fa" */
        char *method, *path; /* copies of what MHD gave the access handler */
        bool started, in_first_call;
        char *deferred_body; /* a first-call refusal sent once the body is read (status set) */
        struct route_target route;
        enum route_op op;      /* control plane: matched route */
        char id[ROUTE_ID_MAX]; /* control plane: {id} of /sandboxes/{id}... */
        /* control plane */
        struct buf body; /* at most HTTP_MAX_CONTROL_BODY */
        size_t discarded;
        bool too_large;
        /* proxy */
        struct proxy_conn *proxy;
        struct v1_conn *v1; /* native/v1.h: /v1/... and /mcp */
        unsigned status;
        int64_t t0_ms;
};

/* Queue a response with body (copied) and Content-Type application/json. */
enum MHD_Result http_reply_json(struct request *req, unsigned status, const char *body);
/* Same with one extra header (name NULL: none). */
enum MHD_Result http_reply_json_hdr(struct request *req, unsigned status, const char *body,
                                    const char *name, const char *value);
/* Queue the error response for r (core/errors.h) with a printf-style message. */
enum MHD_Result http_reply_error(struct request *req, int r, const char *sandbox_id,
                                 const char *fmt, ...) _printf_(4, 5);
enum MHD_Result http_reply_204(struct request *req);

/* Header lookup (case-insensitive). */
const char *http_header(struct request *req, const char *name);
