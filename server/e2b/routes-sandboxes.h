/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The E2B control plane (docs/e2b-wire.md §2): X-API-KEY auth and
 *   POST /sandboxes, POST /v2/sandboxes                 201 Sandbox
 *   GET /sandboxes, GET /v2/sandboxes                   200 [ListedSandbox] (+X-Next-Token)
 *   GET /sandboxes/{id}                                 200 SandboxDetail
 *   DELETE /sandboxes/{id}                              204
 *   POST /sandboxes/{id}/timeout                        204
 *   POST /sandboxes/{id}/connect, /v2/.../connect       200 Sandbox (201 when it resumed)
 * and the lifecycle routes of e2b/routes-lifecycle.h.
 * Errors are {"code","message"} with the matching status (core/errors.h); unknown routes 404.
 */
#pragma once

#include <cjson/cJSON.h>

#include "http/http.h"

/* First call of a control-plane request, before any body: matches the route (404) and checks
 * X-API-KEY (401), queueing the error response; MHD_YES to go on reading the body. */
enum MHD_Result route_sandboxes_begin(struct request *req);

/* Called once the whole body (req->body, bounded) is in. Queues exactly one response. */
enum MHD_Result route_sandboxes_handle(struct request *req);

/* Parse the list query: limit (1..100, default 100), nextToken (offset), metadata filter
 * ("k=v&k2=v2", itself URL-encoded once), state (comma list). Pure enough to unit-test. */
/* nextToken is a cursor, "<started_at>.<id>" of the last sandbox of the previous page (the list
 * is sorted by both): a page starts after it, so sandboxes killed or created meanwhile never
 * shift the next page (an offset would skip or repeat some). */
struct list_query {
        unsigned limit;
        bool after;            /* a cursor was given */
        int64_t after_started; /* the cursor: (started_at, id) */
        char after_id[32];
        cJSON *metadata; /* owned object or NULL */
        bool want_running, want_paused;
};
int list_query_parse(const char *limit, const char *next_token, const char *metadata,
                     const char *state, struct list_query *ret, const char **ret_msg);
void list_query_done(struct list_query *q);
