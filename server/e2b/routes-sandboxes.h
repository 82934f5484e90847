/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The E2B control plane (docs/e2b-wire.md §2), rows of the route table (front/routes.c, which
 * checks X-API-KEY and parses the JSON body first):
 *   POST /sandboxes, POST /v2/sandboxes                 201 Sandbox
 *   GET /sandboxes, GET /v2/sandboxes                   200 [ListedSandbox] (+X-Next-Token,
 *                                                       X-Total-Running; e2b/list-query.h)
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

/* The handlers; each returns its status (http/http.h). */
int e2b_create(struct request *req);
int e2b_list_v1(struct request *req);
int e2b_list_v2(struct request *req);
int e2b_get(struct request *req);
int e2b_kill(struct request *req);
int e2b_timeout(struct request *req);
int e2b_connect(struct request *req);
/* GET/POST /files that reached the control plane: no E2b-Sandbox-* header, no sandbox Host,
 * and no registered sandbox's token validates its signature. A signed URL gets envd's refusal
 * (401 "invalid signature" / "signature is already expired", 400 for a malformed expiration,
 * e2b/files-signature.h), anything else the control plane's 404. Answers in its begin call,
 * before any body byte. */
int e2b_files(struct request *req);
