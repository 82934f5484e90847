/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MCP (Model Context Protocol) over streamable HTTP at /mcp (Bearer auth like /v1):
 *   POST   /mcp   one JSON-RPC 2.0 message; a request is answered with application/json (a
 *                 tools/call with a progressToken, from a client accepting text/event-stream,
 *                 with an SSE stream: mcp_sse_call()), a notification or response with
 *                 202. `initialize` issues Mcp-Session-Id; every later message must carry it
 *                 (missing 400, unknown or ended 404).
 *   GET    /mcp   405 (no server-initiated stream)
 *   DELETE /mcp   ends the session and kills its sandbox (204)
 * Methods: initialize, ping, tools/list, tools/call (mcp/mcp-tools.c); others -32601.
 * Notifications are answered 202 without waiting for the session's call in flight;
 * notifications/cancelled naming that call's id interrupts run_python / run_node (the kernel
 * keeps its state) or kills the command of run_shell / install_package (the file tools run to
 * their end).
 *
 * One sandbox per session (template SBX_MCP_TEMPLATE, default MCP_TEMPLATE_DEFAULT), created
 * lazily by the first tool call and shared by every call of the session, so files, installed
 * packages and the variables of its code-interpreter contexts (run_python, run_node) persist. The
 * sandbox's own timeout is the idle timeout (default 600 s; SBX_MCP_IDLE_TIMEOUT_S, or the
 * Sbx-Mcp-Idle-Timeout header of initialize, 1..86400): every call pushes it forward, so the
 * lifecycle timer reaps an idle sandbox; the next call creates a fresh one and says so.
 * At most MCP_MAX_SESSIONS sessions; a new one evicts the least recently used.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "http/http.h"

#define MCP_MAX_SESSIONS     256
#define MCP_EARLY_CANCELS    8 /* cancels remembered per session for calls not started yet */
#define MCP_TEMPLATE_DEFAULT "code-interpreter-v1"
#define MCP_IDLE_DEFAULT_S   600
#define MCP_PROTOCOL_LATEST  "2025-06-18"

/* The whole (bounded) body is in; queue exactly one response. */
enum MHD_Result mcp_handle(struct request *req, const char *body, size_t len);

/* {"jsonrpc":"2.0","id":id,"result":result} (taking result), or with {"error":{code,msg}}
 * when result is NULL. */
cJSON *mcp_rpc_message(const cJSON *id, cJSON *result, int code, const char *msg);
/* One tools/call in session sid, waiting for the session's call in flight: the answer, or NULL
 * for an unknown session. */
cJSON *mcp_session_call(struct server *srv, const char *sid, const cJSON *id, const cJSON *params);
/* Interrupt session sid's call id when it is in flight (notifications/cancelled). 0, or
 * -ENOENT for an unknown session. */
int mcp_session_cancel(const char *sid, const cJSON *id);
/* A tools/call that asked for progress (params._meta.progressToken) from a client that accepts
 * text/event-stream: answered as an SSE stream (mcp/mcp-sse.c): notifications/progress every
 * MCP_PROGRESS_INTERVAL_MS while the call runs, then its answer. */
#define MCP_PROGRESS_INTERVAL_MS 2000
enum MHD_Result mcp_sse_call(struct request *req, const char *sid, const cJSON *id,
                             const cJSON *params, const cJSON *token);

/* What a tool call sees of its session (mcp/mcp-tools.c). sandbox_id may be rewritten when the
 * sandbox is (re)created. */
struct mcp_call {
        struct server *srv;
        char sandbox_id[32];
        int idle_s;
        bool had_sandbox;          /* a sandbox existed before for this session */
        const atomic_bool *cancel; /* set by notifications/cancelled for this call */
};

/* tools/list result (caller owns). */
cJSON *mcp_tools_list(void);
/* tools/call: fills *ret (caller owns) with a CallToolResult; -EINVAL (with *ret an error
 * message string in ret_msg) for an unknown tool or bad arguments, which are JSON-RPC errors. */
int mcp_tools_call(struct mcp_call *c, const char *name, const cJSON *args, cJSON **ret,
                   const char **ret_msg);
