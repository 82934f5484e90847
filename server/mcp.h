/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MCP (Model Context Protocol) over streamable HTTP at /mcp: JSON-RPC 2.0 requests by POST,
 * answered with application/json; Mcp-Session-Id issued at initialize. One sandbox per
 * session, opened lazily on the first tool call and shared by every call of the session
 * (mcp-session.c); tools in mcp-tools.c.
 */
#pragma once

#include "http.h"

/* The whole (bounded) body is in; queue exactly one response. */
enum MHD_Result mcp_handle(struct request *req, const char *body, size_t len);
