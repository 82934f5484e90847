/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Request routing, pure functions only (unit-tested):
 *   1. E2b-Sandbox-Port header present → proxy to (E2b-Sandbox-Id, port); port must be
 *      1..65535 (else 400): 49983 envd, 49999 the code interpreter, any other a user port.
 *   2. else Host "<port>-<id>.<anything>" with such a port → proxy (older SDKs, and
 *      sandbox.getHost(port) of every SDK).
 *   3. else the route table (front/routes.c, matched by route_find()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ROUTE_ID_MAX 64

enum route_kind {
        ROUTE_CONTROL,
        ROUTE_PROXY,
        ROUTE_BAD_PORT, /* E2b-Sandbox-Port present but not a port 1..65535 */
};

struct route_target {
        enum route_kind kind;
        uint16_t port;
        char id[ROUTE_ID_MAX]; /* may be empty: missing E2b-Sandbox-Id */
};

/* Classify from the three headers (each may be NULL). */
void route_classify(const char *port_hdr, const char *id_hdr, const char *host,
                    struct route_target *ret);

/* ---- the route table (front/routes.c) ---- */

#define ROUTE_MAX_ARGS 2

/* Methods as bits, so one row can take several. */
enum {
        ROUTE_GET = 1u << 0,
        ROUTE_POST = 1u << 1,
        ROUTE_PUT = 1u << 2,
        ROUTE_DELETE = 1u << 3,
        ROUTE_HEAD = 1u << 4,
        ROUTE_OTHER = 1u << 5, /* any other method (PATCH, OPTIONS, ...) */
        ROUTE_ANY = (1u << 6) - 1,
};

/* Who may call a route; checked before any body byte is read. */
enum route_auth {
        AUTH_NONE,
        AUTH_API_KEY,        /* X-API-KEY (the E2B control plane) */
        AUTH_API_KEY_BEARER, /* X-API-KEY, or Authorization: Bearer <key> (Prometheus) */
        AUTH_BEARER,         /* Authorization: Bearer <key>, or X-API-KEY (the native API) */
        AUTH_BEARER_TOKEN,   /* AUTH_BEARER, or ?token=<key> (browsers' WebSockets) */
};

/* What the front door does with the request body. */
enum route_body {
        BODY_NONE,     /* read and dropped (bounded by HTTP_MAX_DISCARD) */
        BODY_JSON,     /* buffered up to max_body, parsed as one JSON object (or empty) */
        BODY_BUFFERED, /* buffered up to max_body, handed over as bytes */
        BODY_STREAM,   /* handed to the route's upload() chunk by chunk as it arrives */
};

/* The shape of the front door's own refusals (404, 401, 405, 413, 400) on a route. */
enum route_errors {
        ERRORS_E2B,    /* {"code","message"} (core/errors.h) */
        ERRORS_NATIVE, /* {"error":{"code","message"}} (native/v1.h) */
};

/* Where a row's request is answered in cluster mode (server/cluster/README.md, "Routing"):
 * decided from the matched row, after the route lookup and the auth check. Without --cluster
 * every row is answered here (PLACE_NODE_ONLY rows answer 404). */
enum route_place {
        PLACE_LOCAL,         /* this node */
        PLACE_SANDBOX,       /* the node that owns the sandbox named by the row's {id} */
        PLACE_VOLUME,        /* the node that holds the volume named by the row's {id} */
        PLACE_LIST,          /* every node: E2B's sandbox list, merged in order, paged */
        PLACE_LIST_NATIVE,   /* every node: the native sandbox list, joined */
        PLACE_LIST_VOLUMES,  /* every node: the volume list, joined */
        PLACE_CREATE,        /* placed once the body is in: E2B's create (volumes pin it) */
        PLACE_CREATE_NATIVE, /* placed once the body is in: the native create */
        PLACE_CREATE_VOLUME, /* placed once the body is in: a volume's create */
        PLACE_SESSION,       /* the node an MCP session id names */
        PLACE_SIGNED_FILES,  /* /files without sandbox headers: the node whose sandbox signed it */
        PLACE_NODE_ONLY,     /* only from another node (a verified hop header); here */
};

struct request;

struct route {
        unsigned methods;
        /* Literal segments, "{name}" (one segment of 1..ROUTE_ID_MAX-1 bytes) and a final
         * "{name*}" (the rest of the path from its '/', at least one byte after it). */
        const char *pattern;
        enum route_auth auth;
        enum route_body body;
        size_t max_body; /* BODY_JSON, BODY_BUFFERED */
        enum route_errors errors;
        enum route_place place;
        /* First call, after the auth check, before any body byte (may be NULL). */
        int (*begin)(struct request *req);
        /* BODY_STREAM: one chunk of the body. */
        int (*upload)(struct request *req, const char *data, size_t len);
        /* Last call, once the body is in. Must answer. */
        int (*handle)(struct request *req);
};

struct route_args {
        char v[ROUTE_MAX_ARGS][ROUTE_ID_MAX]; /* the {name} captures, in order */
        const char *tail;                     /* the {name*} capture: into the path, or NULL */
};

/* Whether path matches pattern; fills args. Pure. */
bool route_pattern_match(const char *pattern, const char *path, struct route_args *args);
/* The method's bit (ROUTE_OTHER for anything unlisted). */
unsigned route_method_bit(const char *method);

/* The first row of table matching method and path, NULL when none; *ret_path_only says some row
 * matched the path under another method. Pure. */
const struct route *route_find(const struct route *table, size_t n, const char *method,
                               const char *path, struct route_args *args, bool *ret_path_only);
/* The shape of a refusal for a path no row takes: ERRORS_NATIVE for /v1[/...] and /mcp[/]. */
enum route_errors route_errors_for_path(const char *path);

/* A port the agent does not serve itself (not 0, 49983, 49999): the sandbox's own server. */
bool route_port_is_user(uint16_t port);
/* envd/code-interpreter paths never reachable from outside (orchestrator-only, port 0); nothing
 * on a user port. */
bool route_proxy_forbidden(uint16_t port, const char *path);
/* Whether a proxied request needs X-Access-Token == the sandbox's envd token: every envd
 * (49983) request but GET /health, and the code interpreter's (49999) /execute; never on a user
 * port (the traffic token guards those: e2b/ingress.h). */
bool route_proxy_needs_token(uint16_t port, const char *method, const char *path);
