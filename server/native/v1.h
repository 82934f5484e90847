/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native API (api/openapi/sbx-v1.yaml), Bearer auth with the same API keys; its routes are
 * rows of the route table (front/routes.c):
 *   GET|POST /v1/sandboxes            answered here (registry, lifecycle)
 *   GET|DELETE /v1/sandboxes/{id}     answered here
 *   POST /v1/sandboxes/{id}/pause|resume  answered here (lifecycle)
 *   /v1/sandboxes/{id}/<op>           relayed to the agent's /v1/<op> on port 0
 *                                     (native/v1-relay.h), verbatim
 *   GET /v1/sandboxes/{id}/terminal   WebSocket upgrade (native/ws-terminal.h)
 *   /mcp                              MCP streamable HTTP (native/mcp-host.h → mcp/mcp.h)
 * Errors are {"error":{"code","message"}} with the HTTP status (v1_reply_error).
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "http/http.h"
#include "lifecycle/sandbox.h"

#define V1_MAX_JSON_BODY (1024 * 1024)
#define V1_RETRY_AFTER_S "1" /* seconds, on a 429 of create */

/* Handlers of the table's /v1 rows: they return their status (http/http.h). */
int v1_check_id_begin(struct request *req); /* 404 for a malformed {id} */
int v1_handle_list(struct request *req);
int v1_handle_create(struct request *req);
int v1_handle_get(struct request *req);
int v1_handle_kill(struct request *req);
/* POST /v1/sandboxes/{id}/pause {keep_memory?} and /resume {timeout?}: the sandbox after. */
int v1_handle_pause(struct request *req);
int v1_handle_resume(struct request *req);

/* {"error":{"code","message"}}; code NULL: derived from status. */
int v1_reply_error(struct request *req, unsigned status, const char *code, const char *fmt, ...)
    _printf_(4, 5);
/* 404 not_found "sandbox <id> not found". */
int v1_reply_not_found(struct request *req, const char *id);
/* Send o (not freed) as JSON with status, optionally one extra header. */
int v1_reply_json(struct request *req, unsigned status, const cJSON *o, const char *hname,
                  const char *hvalue);

/* The registered, running sandbox {id} names, for a route that talks to its agent: NULL when it
 * is not (the 404 or 409 answer is then queued, its status in *ret_status). */
struct sandbox *v1_running_sandbox(struct request *req, const char *id, int *ret_status);

/* The /v1 JSON shape of a sandbox. NULL on ENOMEM. */
cJSON *v1_sandbox_json(const struct sandbox *s);
