/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What MCP's files share (not part of its interface, mcp/mcp.h): the session table, what a
 * tool call sees, the shape of a CallToolResult, and the calls into the session's sandbox.
 *
 *   mcp.c          the HTTP entry: JSON-RPC messages, initialize, sessions
 *   mcp-rpc.c      parsing one JSON-RPC message (fuzzed: tests/fuzz/fuzz-mcp-rpc.c)
 *   mcp-sse.c      a tools/call answered as an event stream with progress
 *   mcp-tools.c    the tool table, run_shell and install_package
 *   mcp-files.c    put_file / upload_file and get_file
 *   mcp-sandbox.c  the session's sandbox, results, and bounded JSON calls to it
 *   mcp-code.c     run_python / run_node on the code interpreter
 *   mcp-ndjson.c   reading the code interpreter's NDJSON (fuzzed: tests/fuzz/fuzz-ndjson.c)
 */
#pragma once

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "json-util.h"
#include "macros.h"
#include "mcp.h"
#include "time-util.h"

#define MCP_MAX_SESSIONS         256
#define MCP_EARLY_CANCELS        8 /* cancels remembered per session for calls not started yet */
#define MCP_PROTOCOL_LATEST      "2025-06-18"
#define MCP_PROGRESS_INTERVAL_MS 2000
#define MCP_MAX_OUTPUT           (1024 * 1024)     /* stdout + stderr kept per call */
#define MCP_MAX_REPLY            (8 * 1024 * 1024) /* bytes read from the sandbox for one call */
#define MCP_MAX_ERROR_BODY       (64 * 1024)       /* a refusal read from the sandbox */
#define MCP_JSON_MAX_DEPTH       32                /* nesting of any JSON MCP parses */
#define MCP_TIMEOUT_MS           120000            /* a tool call's default; at most 300 s */

struct mcp_session {
        char id[MCP_SESSION_ID_MAX]; /* "" = free slot */
        char sandbox_id[MCP_SANDBOX_ID_MAX];
        int idle_s;
        bool had_sandbox;
        int64_t last_used;
        pthread_mutex_t call_lock; /* serializes the calls of one session */
        char inflight[72];         /* JSON id of the tools/call running, under table_lock */
        atomic_bool cancel;        /* that call was cancelled by the client */
        /* ids cancelled while not in flight (a call still waiting for call_lock), under
         * table_lock: such a call answers "cancelled" without running */
        char cancelled[MCP_EARLY_CANCELS][72];
        unsigned cancelled_next;
};

struct mcp {
        struct mcp_host host;
        char template_id[65];
        int idle_default_s;
        pthread_mutex_t table_lock;
        struct mcp_session sessions[MCP_MAX_SESSIONS];
};

/* ---- JSON-RPC (mcp-rpc.c) ---- */

/* One parsed message. The pointers point into msg, which the caller owns. */
struct mcp_rpc {
        cJSON *msg;
        const char *method; /* NULL: none (a response sent to us, or invalid) */
        bool response;      /* no method, but a result or an error */
        const cJSON *id;    /* NULL for a notification */
        const cJSON *params;
};
/* Parse one message of len bytes: 0 and *ret, or a JSON-RPC error code (-32700 not JSON or too
 * deep, -32600 not one request object) with *ret_msg saying why. */
int mcp_rpc_parse(const char *body, size_t len, struct mcp_rpc *ret, const char **ret_msg);
void mcp_rpc_done(struct mcp_rpc *r);
/* {"jsonrpc":"2.0","id":id,"result":result} (taking result), or with {"error":{code,msg}}
 * when result is NULL. */
cJSON *mcp_rpc_message(const cJSON *id, cJSON *result, int code, const char *msg);

/* ---- sessions (mcp-session.c) ---- */

/* One tools/call in session sid, waiting for the session's call in flight: the answer, or NULL
 * for an unknown session. */
/* The session table (mcp-session.c). New: a fresh session (evicting the least recently used,
 * whose sandbox is killed). Get: the session with its call_lock held, NULL when unknown; put
 * releases it as used now; end forgets it and kills its sandbox (call_lock held, released).
 * Touch: see mcp-session.c. */
int mcp_session_new(struct mcp *m, int idle_s, const char *prefix,
                    char ret_id[static MCP_SESSION_ID_MAX]);
struct mcp_session *mcp_session_get(struct mcp *m, const char *id);
void mcp_session_put(struct mcp *m, struct mcp_session *s);
void mcp_session_end(struct mcp *m, struct mcp_session *s);
int mcp_session_touch(struct mcp *m, const char *id, const char *cancel_id, bool cancel_any);
cJSON *mcp_session_call(struct mcp *m, const char *sid, const cJSON *id, const cJSON *params);
/* Interrupt session sid's call id when it is in flight (notifications/cancelled). 0, or
 * -ENOENT for an unknown session. */
int mcp_session_cancel(struct mcp *m, const char *sid, const cJSON *id);

/* ---- the SSE answer (mcp-sse.c) ---- */

/* A tools/call that asked for progress (params._meta.progressToken) from a client that accepts
 * text/event-stream: notifications/progress every MCP_PROGRESS_INTERVAL_MS while the call
 * runs, then its answer. -ENOMEM, -EAGAIN (no thread). */
int mcp_sse_start(struct mcp *m, const char *sid, const cJSON *id, const cJSON *params,
                  const cJSON *token, struct mcp_sse **ret);

/* ---- tools ---- */

/* What a tool call sees of its session. sandbox_id may be rewritten when the sandbox is
 * (re)created. */
struct mcp_call {
        struct mcp *m;
        char sandbox_id[MCP_SANDBOX_ID_MAX];
        int idle_s;
        bool had_sandbox;          /* a sandbox existed before for this session */
        const atomic_bool *cancel; /* set by notifications/cancelled for this call */
};

/* tools/list result (caller owns). */
cJSON *mcp_tools_list(void);
/* tools/call: fills *ret (caller owns) with a CallToolResult; -EINVAL (with a message in
 * *ret_msg) for an unknown tool or bad arguments, which are JSON-RPC errors. */
int mcp_tools_call(struct mcp_call *c, const char *name, const cJSON *args, cJSON **ret,
                   const char **ret_msg);
int mcp_arg_timeout(const cJSON *args);

/* {"content":[{"type":"text","text":text}],"isError":is_error} */
cJSON *mcp_text_result(const char *text, bool is_error);
/* A tool failure (isError true) with a message a model can act on, cut at 1 KiB. */
cJSON *mcp_failure(const char *fmt, ...) _printf_(1, 2);
/* A result (not a failure) saying the call was cancelled: structuredContent.cancelled. */
cJSON *mcp_cancelled_result(const char *text);

/* Make sure c has a live sandbox whose timeout is past a call of call_ms; *note (static text)
 * says when a fresh sandbox replaced a reaped one. NULL when c->sandbox_id is ready, else the
 * tool failure (sandbox_unavailable) to answer with. */
cJSON *mcp_ensure_sandbox(struct mcp_call *c, int call_ms, const char **note);
/* After a call: the idle timeout counts from now. */
void mcp_touch(struct mcp_call *c);

/* A bounded answer from the session's sandbox. */
struct mcp_reply {
        int status;
        char content_type[128];
        char *body; /* NUL-terminated */
        size_t len;
};
void mcp_reply_done(struct mcp_reply *r);
/* One native-API call (method path?query with body) on c's sandbox, waiting at most
 * timeout_ms for its head (-ECANCELED once *cancel, which may be NULL, is set: the request is
 * closed then, which stops the work) and reading at most max bytes of its answer (-EMSGSIZE
 * beyond). Returns the status or -errno. */
int mcp_native_call(struct mcp_call *c, const atomic_bool *cancel, const char *method,
                    const char *path, const char *query, const char *content_type, const void *body,
                    size_t len, size_t max, int timeout_ms, struct mcp_reply *ret);
/* The message of a native-API error answer ({"error":{"code","message"}}, or E2B's
 * {"code","message"}), cut at 1 KiB; a default when there is none. Pure. */
void mcp_error_message(const char *body, size_t len, char msg[static 1025]);
/* Parse an answer body as one JSON object no deeper than MCP_JSON_MAX_DEPTH; NULL otherwise. */
cJSON *mcp_parse_object(const char *body, size_t len);

/* run_python / run_node (mcp-code.c). */
cJSON *mcp_run_code(struct mcp_call *c, const char *language, const char *code, int timeout_ms);
/* put_file / upload_file and get_file (mcp-files.c); NULL with *ret_msg for bad arguments. */
cJSON *mcp_tool_put_file(struct mcp_call *c, const cJSON *args, const char **ret_msg);
cJSON *mcp_tool_get_file(struct mcp_call *c, const cJSON *args, const char **ret_msg);
