/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lifecycle routes of the E2B control plane (docs/e2b-wire.md §2.5), rows of the route table
 * (front/routes.c, X-API-KEY checked there):
 *   POST /sandboxes/{id}/pause        204; 409 already paused; 404
 *   POST /sandboxes/{id}/resume       201 Sandbox (409 when not paused)
 *   POST /sandboxes/{id}/refreshes    204 {"duration": 0..3600}: endAt = max(endAt, now + d)
 *   GET  /sandboxes/{id}/metrics      200 [SandboxMetric] (?start=&end= unix seconds)
 *   POST /sandboxes/{id}/snapshots    201 {snapshotID, names}
 *   POST /sandboxes/{id}/fork         201 [{sandbox}|{error}]
 *   GET  /snapshots                   200 [{snapshotID, names}] (+X-Next-Token)
 *   DELETE /templates/{id}            204 (snapshots only; 404 unknown)
 *   GET  /metrics                     200 Prometheus text (X-API-KEY or Bearer key)
 */
#pragma once

#include <cjson/cJSON.h>

#include "http/http.h"

/* The handlers; each returns its status (http/http.h). */
int e2b_pause(struct request *req);
int e2b_resume(struct request *req);
int e2b_refresh(struct request *req);
int e2b_metrics(struct request *req);
int e2b_snapshot_create(struct request *req);
int e2b_fork(struct request *req);
int e2b_snapshot_list(struct request *req);
int e2b_template_delete(struct request *req);
int e2b_prometheus(struct request *req);

/* An error reply; -EDQUOT becomes 429 with Retry-After (the SDKs retry on it). */
int route_reply_errno(struct request *req, int r, const char *msg);

/* 404 in the E2B error shape for sandbox id: "sandbox \"<id>\" was removed: <why>" while id is
 * a recent tombstone, else "sandbox \"<id>\" doesn't exist or you don't have access to it". */
int route_reply_not_found(struct request *req, const char *id);

/* The registered sandbox id names: a reference the caller unrefs. NULL when id is malformed
 * or unknown; the route_reply_not_found 404 is then queued and *ret_status holds its status. */
struct sandbox *route_sandbox_get(struct request *req, const char *id, int *ret_status);

/* The body's "timeout" (seconds; `def` when absent, as validate_timeout) into *ret: 0, or the
 * status of the 400 queued for a bad one. */
int route_timeout(struct request *req, const cJSON *body, int64_t def, int64_t *ret);
