/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native API (api/openapi/sbx-v1.yaml), Bearer auth with the same API keys:
 *   /v1/sandboxes[/{id}]              answered here (registry, lifecycle)
 *   /v1/sandboxes/{id}/<op>           relayed to the agent's /v1/<op> on port 0
 *                                     (native/v1-relay.h; the agent is untrusted: bounded)
 *   GET /v1/sandboxes/{id}/terminal   WebSocket upgrade (native/ws-terminal.h)
 *   /mcp                              MCP streamable HTTP (mcp/mcp.h)
 * Errors are {"error":{"code","message"}} with the HTTP status (v1_reply_error).
 *
 * http/http.c calls route_v1_begin() on the first call of a control-plane request whose path is
 * /v1/... or /mcp, then route_v1_upload() per body chunk and route_v1_finish() once; the
 * state hangs off req->v1 and is freed by route_v1_free() in the completion callback.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "http/http.h"
#include "lifecycle/sandbox.h"

#define V1_MAX_JSON_BODY (1024 * 1024)

/* "/v1/sandboxes[/{id}[/rest]]" → id ("" for the collection) and rest (NULL when none; else
 * points into path, e.g. "/exec"). false when path is no such route. Pure. */
bool v1_path_split(const char *path, char id[static ROUTE_ID_MAX], const char **ret_rest);

/* Whether the path belongs to this module (/v1, /v1/..., /mcp). */
bool route_v1_wants(const char *path);

enum MHD_Result route_v1_begin(struct request *req);
enum MHD_Result route_v1_upload(struct request *req, const char *data, size_t len);
enum MHD_Result route_v1_finish(struct request *req);
void route_v1_free(struct v1_conn *c);

/* {"error":{"code","message"}}; code NULL: derived from status. */
enum MHD_Result v1_reply_error(struct request *req, unsigned status, const char *code,
                               const char *fmt, ...) _printf_(4, 5);
/* Send o (not freed) as JSON with status, optionally one extra header. */
enum MHD_Result v1_reply_json(struct request *req, unsigned status, const cJSON *o,
                              const char *hname, const char *hvalue);
/* Default error code for an HTTP status ("not_found", ...). */
const char *v1_status_code(unsigned status);
/* Status and error code for a -errno from the server's own functions. */
unsigned v1_errno_status(int r);

/* Authorization: Bearer <key> (or X-API-KEY) against the keys file. */
bool v1_authorized(struct request *req);

/* The /v1 JSON shape of a sandbox. NULL on ENOMEM. */
cJSON *v1_sandbox_json(const struct sandbox *s);
