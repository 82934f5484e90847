/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One HTTP request as handlers see it, and the reply helpers they answer with.
 *
 * Per-request context: allocated in MHD's URI-log callback (the first thing MHD calls for a
 * request, and the only place the raw request target — with its still-encoded query — is
 * visible), handed to the access handler as *req_cls, freed in the NOTIFY_COMPLETED callback
 * and nowhere else (front/front.c).
 *
 * Handlers return their status: the HTTP status of the answer they queued (or decided, see
 * deferred refusals in http.c), 0 when they queued nothing yet and want the next call (a
 * streamed route's begin and upload), -errno to drop the connection. Every reply helper below
 * returns the same.
 */
#pragma once

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "macros.h"
#include "http/route.h"
#include "core/server.h"

/* Connection bounds and deadlines are the gate's (front/gate.h). This one is libmicrohttpd's
 * own, a backstop: no byte either way for this long during a request (a response reader that
 * blocks is not interrupted by it). */
#define HTTP_STALL_TIMEOUT_S  120
#define HTTP_CONN_MEMORY      (512 * 1024)
#define HTTP_THREAD_STACK     (1024 * 1024) /* per connection thread (glibc's default: 8 MiB) */
#define HTTP_KEEPALIVE_HINT   "timeout=5"   /* Keep-Alive header: a second under GATE_IDLE_MS */
#define HTTP_MAX_CONTROL_BODY (1024 * 1024)
/* An oversized or refused body is read and dropped up to this much, then the connection is
 * cut. */
#define HTTP_MAX_DISCARD (16 * 1024 * 1024)

struct http_upgrade; /* http/upgrade.h */

/* The body of a BODY_JSON / BODY_BUFFERED route, collected by front/ (at most the route's
 * max_body) before its handler runs. */
struct http_body {
        struct buf raw;
        cJSON *json; /* BODY_JSON: the parsed object, NULL for an empty body */
        bool too_large;
};

struct request {
        struct server *srv;
        struct MHD_Connection *conn;
        char rid[17];
        char *target;        /* raw request target, e.g. "/files?path=%2Fa" */
        char *method, *path; /* copies of what MHD gave the access handler */
        bool started, in_first_call;
        int64_t t0_ms;
        unsigned status; /* the answer's status once one is queued or decided */
        /* a first-call refusal (status above), sent on a later call: http_reply_deferred() */
        char *deferred_body, *deferred_hname, *deferred_hvalue;
        size_t discarded; /* body bytes dropped (refused, too large, not wanted) */
        bool proxied;     /* a sandbox's traffic (e2b/proxy.h), not a table route */
        bool forwarded;   /* --cluster: relayed to the sandbox's node (cluster/forward.h) */
        bool from_node;   /* --cluster: carried a verified hop header (cluster/hop-auth.h) */
        char sandbox_id[ROUTE_ID_MAX]; /* a proxied request's sandbox, for the access log */
        /* a request of the route table (front/routes.c) */
        const struct route *route;
        struct route_args args; /* the {captures} of its pattern */
        struct http_body *body; /* BODY_JSON and BODY_BUFFERED routes */
        /* the proxy's or a streamed route's own state (e2b/proxy.c, native/v1-relay.c): set
         * by its first call, freed with the request */
        void *state;
        void (*state_free)(void *state);
        /* a 101 queued and not yet handed over (http/upgrade.h): released when the request
         * ends without its upgrade */
        struct http_upgrade *upgrade;
};

/* Queue a response with body (copied) and Content-Type application/json. Returns status. */
int http_reply_json(struct request *req, unsigned status, const char *body);
/* Same with one extra header (name NULL: none). */
int http_reply_json_hdr(struct request *req, unsigned status, const char *body, const char *name,
                        const char *value);
/* o (not freed; NULL: building it failed) as JSON; 500 in the E2B shape when it cannot be
 * printed. */
int http_reply_cjson(struct request *req, unsigned status, const cJSON *o, const char *name,
                     const char *value);
/* Queue body (copied, len bytes) with the given Content-Type and one extra header (NULL:
 * none). */
int http_reply_bytes(struct request *req, unsigned status, const char *content_type,
                     const void *body, size_t len, const char *name, const char *value);
/* Queue the error response for r (core/errors.h) with a printf-style message. */
int http_reply_error(struct request *req, int r, const char *sandbox_id, const char *fmt, ...)
    _printf_(4, 5);
int http_reply_204(struct request *req);
/* Send the refusal a reply helper decided on the first call (deferred_body, with its extra
 * header) and free it; http_deferred_free() frees it unsent. */
int http_reply_deferred(struct request *req);
void http_deferred_free(struct request *req);
/* Queue resp (not destroyed) with status: status, or -EIO when MHD refuses it. */
int http_queue(struct request *req, unsigned status, struct MHD_Response *resp);

/* The API key check of a route (http/route.h enum route_auth): 0, -ENOKEY when no key was
 * sent, -EKEYREJECTED for a wrong one. */
int http_auth_check(struct request *req, enum route_auth auth);

/* Header lookup (case-insensitive). */
const char *http_header(struct request *req, const char *name);
/* The base URL ("https://host[:port][/prefix]", no trailing slash) of a URL sbxd hands this
 * client (an upload link): --public-url when set, else the scheme sbxd serves (https under
 * --tls-cert) and the Host the client sent (127.0.0.1 when it sent none, or a bad one).
 * Returns -ENAMETOOLONG when it does not fit. */
int http_public_base(struct request *req, char *buf, size_t size);
/* Query argument lookup (decoded by MHD). */
const char *http_arg(struct request *req, const char *name);
/* Whether a request/response header is hop-by-hop (never forwarded to or from a sandbox):
 * Connection, Transfer-Encoding, ..., and sbx's own routing headers E2b-Sandbox-Id/Port. */
bool http_hop_by_hop(const char *name);
/* The HTTP client's socket for a connection (polled for hangup only), -1 when unknown. */
int http_client_fd(struct request *req);
