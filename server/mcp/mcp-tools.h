/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the MCP tools share (mcp/mcp-tools.c: the table, shell, packages and files; mcp/mcp-code.c:
 * run_python and run_node on the code interpreter): the session's sandbox and the shape of a
 * CallToolResult.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "json-util.h"
#include "macros.h"
#include "mcp/mcp.h"
#include "time-util.h"

#define MCP_MAX_OUTPUT (1024 * 1024) /* stdout + stderr kept per call */

struct sandbox;

/* {"content":[{"type":"text","text":text}],"isError":is_error} */
cJSON *mcp_text_result(const char *text, bool is_error);
/* A tool failure (isError true) with a message a model can act on, cut at 1 KiB. */
cJSON *mcp_failure(const char *fmt, ...) _printf_(1, 2);

/* Make sure c has a live sandbox and push its timeout past a call of call_ms; *note (static
 * text) says when a fresh sandbox replaced a reaped one. NULL when *ret is ready, else the
 * tool failure (sandbox_unavailable) to answer with. */
cJSON *mcp_ensure_sandbox(struct mcp_call *c, int call_ms, struct sandbox **ret, const char **note);
/* A result (not a failure) saying the call was cancelled: structuredContent.cancelled. */
cJSON *mcp_cancelled_result(const char *text);
/* Wait until fd is readable (0), the deadline passes (-ETIMEDOUT) or cancel is set
 * (-ECANCELED, looked at every 100 ms: notifications/cancelled). */
int mcp_wait_readable(int fd, int64_t deadline, const atomic_bool *cancel);

/* After a call: the idle timeout counts from now. */
void mcp_touch(struct mcp_call *c, struct sandbox *s);

/* run_python / run_node: run code in the session's persistent code-interpreter context for
 * language ("python" or "javascript") and turn the execution into a CallToolResult
 * (mcp/mcp-code.c). */
cJSON *mcp_run_code(struct mcp_call *c, const char *language, const char *code, int timeout_ms);
