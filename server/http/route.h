/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Request routing, pure functions only (unit-tested):
 *   1. E2b-Sandbox-Port header present → proxy to (E2b-Sandbox-Id, port); port must be 49983
 *      or 49999 (else 400).
 *   2. else Host "<port>-<id>.<anything>" with a sandbox port → proxy (older SDKs).
 *   3. else control plane: the table in route_match().
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define ROUTE_ID_MAX 64

enum route_kind {
        ROUTE_CONTROL,
        ROUTE_PROXY,
        ROUTE_BAD_PORT, /* E2b-Sandbox-Port present but not a sandbox port */
};

struct route_target {
        enum route_kind kind;
        uint16_t port;
        char id[ROUTE_ID_MAX]; /* may be empty: missing E2b-Sandbox-Id */
};

/* Classify from the three headers (each may be NULL). */
void route_classify(const char *port_hdr, const char *id_hdr, const char *host,
                    struct route_target *ret);

enum route_op {
        OP_NONE = 0,
        OP_CREATE_V1,
        OP_CREATE_V2,
        OP_LIST_V1,
        OP_LIST_V2,
        OP_GET,
        OP_KILL,
        OP_TIMEOUT,
        OP_CONNECT_V1,
        OP_CONNECT_V2,
        /* e2b/routes-lifecycle.h */
        OP_PAUSE,
        OP_RESUME,
        OP_REFRESH,
        OP_METRICS,
        OP_SNAPSHOT_CREATE,
        OP_FORK,
        OP_SNAPSHOT_LIST,
        OP_TEMPLATE_DELETE,
        OP_PROMETHEUS,
};

/* Control-plane table. Fills ret_id (ROUTE_ID_MAX) for /sandboxes/{id}... routes; an id that
 * is not [a-z0-9]{1,63} still matches (the handler answers 404 for it). OP_NONE: unknown. */
enum route_op route_match(const char *method, const char *path, char ret_id[ROUTE_ID_MAX]);

/* envd/code-interpreter paths never reachable from outside (orchestrator-only, port 0). */
bool route_proxy_forbidden(uint16_t port, const char *path);
/* Whether a proxied request needs X-Access-Token == the sandbox's envd token: every envd
 * (49983) request but GET /health, and the code interpreter's (49999) /execute. */
bool route_proxy_needs_token(uint16_t port, const char *method, const char *path);
