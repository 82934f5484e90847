/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /v1/sandboxes/{id}/terminal: an interactive PTY over WebSocket (RFC 6455). sbxd does the
 * HTTP upgrade (libmicrohttpd's MHD_create_response_for_upgrade) and the WebSocket framing
 * (wslay); the PTY is the agent's, reached by one full-duplex frame-channel request on port 0
 * (GET /v1/terminal): its request DATA frames carry input and resizes, its response DATA
 * frames the PTY output.
 *
 * Messages, client → server: binary = raw input bytes; text = a JSON control message
 * {"type":"resize","cols":N,"rows":N} or {"type":"input","data":"..."}, and any other text is
 * raw input (so `websocat` typing lines just works). Server → client: binary messages of PTY
 * output; a final text message {"type":"exit","exit_code":N}, then a close frame.
 */
#pragma once

#include <stdbool.h>

#include "http/http.h"

/* The route's begin: sandbox {id} must be running (404, 409). Browsers cannot set
 * Authorization on a WebSocket: the route takes ?token=<api key> too (AUTH_BEARER_TOKEN). */
int ws_terminal_begin(struct request *req);
/* Queue the 101 answer (or an error) for sandbox {id}. Returns the status. */
int ws_terminal_upgrade(struct request *req);
