/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbxd's side of the MCP component (mcp/mcp.h): the /mcp route's handler, which hands the
 * buffered request to mcp_handle() and sends its answer (a body, or its event stream through
 * MHD's content reader), and the host MCP calls back (struct mcp_host): sandboxes through the
 * lifecycle, requests to them through the channel API (channel/agent-req.h) the way the /v1
 * relay and the code-interpreter proxy send them.
 */
#pragma once

#include "http/http.h"

/* The route's handler (front/routes.c): Bearer auth and the bounded body are the table's. */
int mcp_host_handle(struct request *req);
