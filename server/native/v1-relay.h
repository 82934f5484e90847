/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Relaying one /v1 sandbox operation, /v1/sandboxes/{id}/<op>, to the sandbox's agent as
 * /v1/<op> on the internal port 0 (api/frames.md) with the channel API
 * (channel/agent-req.h): REQ_HEAD (the agent path, the raw query, and Content-Type only: the
 * client's Authorization never reaches the sandbox), the request body as DATA frames as it
 * arrives, END; then the agent's answer passed through verbatim (channel/agent-mhd.h):
 * status, headers minus hop-by-hop ones, body. A 2xx/3xx body streams (its Content-Length
 * enforced); a >= 400 body is read whole first, at most V1_RELAY_MAX_ERROR bytes. sbxd reads
 * nothing of it: the agent answers its errors in the native shape
 * {"error":{"code","message"}} itself.
 *
 * The route table (front/routes.c) calls these as the begin, upload and handle of the
 * streamed route; the state lives in req->state.
 */
#pragma once

#include <stddef.h>

#include "http/http.h"

#define V1_RELAY_MAX_ERROR  (64 * 1024)
#define V1_RELAY_TIMEOUT_MS 60000
#define V1_RELAY_MAX_PATH   512

int v1_relay_begin(struct request *req);
int v1_relay_upload(struct request *req, const char *data, size_t len);
int v1_relay_finish(struct request *req);
