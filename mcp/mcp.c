/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP entry of MCP (streamable HTTP, one endpoint):
 *   POST    one JSON-RPC 2.0 message; a request is answered with application/json (a
 *           tools/call with a progressToken, from a client accepting text/event-stream, with
 *           an SSE stream: mcp-sse.c), a notification or response with 202. `initialize`
 *           issues Mcp-Session-Id; every later message must carry it (missing 400, unknown or
 *           ended 404).
 *   GET     405 (no server-initiated stream)
 *   DELETE  ends the session and kills its sandbox (204)
 * Methods: initialize, ping, tools/list, tools/call (mcp-tools.c); others -32601.
 * Notifications are answered 202 without waiting for the session's call in flight;
 * notifications/cancelled naming that call's id interrupts run_python / run_node (the kernel
 * keeps its state) or kills the command of run_shell / install_package (the file tools run to
 * their end).
 *
 * One sandbox per session, created lazily by the first tool call and shared by every call of
 * the session, so files, installed packages and the variables of its code-interpreter contexts
 * (run_python, run_node) persist. The sandbox's own timeout is the idle timeout (default
 * MCP_IDLE_DEFAULT_S; SBX_MCP_IDLE_TIMEOUT_S, or the Sbx-Mcp-Idle-Timeout header of
 * initialize, 1..86400): every call pushes it forward, so the host reaps an idle sandbox; the
 * next call creates a fresh one and says so. At most MCP_MAX_SESSIONS sessions; a new one
 * evicts the least recently used.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "macros.h"
#include "mcp-internal.h"
#include "random-util.h"

struct mcp *mcp_new(const struct mcp_host *host)
{
        struct mcp *m = calloc(1, sizeof(*m));
        if (!m)
                return NULL;
        m->host = *host;
        const char *t = getenv("SBX_MCP_TEMPLATE");
        snprintf(m->template_id, sizeof(m->template_id), "%s", t && *t ? t : MCP_TEMPLATE_DEFAULT);
        const char *e = getenv("SBX_MCP_IDLE_TIMEOUT_S");
        long v = e ? strtol(e, NULL, 10) : 0;
        m->idle_default_s = v >= 1 && v <= 86400 ? (int)v : MCP_IDLE_DEFAULT_S;
        pthread_mutex_init(&m->table_lock, NULL);
        for (size_t i = 0; i < ELEMENTSOF(m->sessions); i++)
                pthread_mutex_init(&m->sessions[i].call_lock, NULL);
        return m;
}

void mcp_free(struct mcp *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < ELEMENTSOF(m->sessions); i++) {
                struct mcp_session *s = &m->sessions[i];
                if (s->id[0] && s->sandbox_id[0])
                        (void)m->host.kill(m->host.ctx, s->sandbox_id);
                pthread_mutex_destroy(&s->call_lock);
        }
        pthread_mutex_destroy(&m->table_lock);
        free(m);
}

void mcp_http_response_done(struct mcp_http_response *r)
{
        free(r->body);
        r->body = NULL;
}

/* ---- answers ---- */

static void add_header(struct mcp_http_response *ret, const char *name, const char *value)
{
        if (ret->n_headers >= MCP_MAX_RESPONSE_HEADERS)
                return;
        ret->headers[ret->n_headers].name = name;
        snprintf(ret->headers[ret->n_headers].value, sizeof(ret->headers[0].value), "%s", value);
        ret->n_headers++;
}

static int reply_text(struct mcp_http_response *ret, unsigned status, const char *text)
{
        ret->status = status;
        ret->content_type = "application/json";
        ret->body = strdup(text);
        if (!ret->body)
                return -ENOMEM;
        ret->len = strlen(text);
        return 0;
}

/* An HTTP-level refusal in the native API's shape. */
static int reply_error(struct mcp_http_response *ret, unsigned status, const char *code,
                       const char *msg)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
        if (!e || !cJSON_AddStringToObject(e, "code", code) ||
            !cJSON_AddStringToObject(e, "message", msg))
                return -ENOMEM;
        _cleanup_free_ char *text = cJSON_PrintUnformatted(o);
        if (!text)
                return -ENOMEM;
        if (status >= 500)
                log_warning("mcp: %u: %s", status, msg);
        return reply_text(ret, status, text);
}

static int reply_unknown_session(struct mcp_http_response *ret)
{
        return reply_error(ret, 404, "not_found",
                           "unknown or ended MCP session: initialize a new one");
}

static int reply_message(struct mcp_http_response *ret, cJSON *o, const char *session)
{
        _cleanup_json_ cJSON *msg = o;
        if (!msg)
                return -ENOMEM;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(msg, "error");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
        unsigned status = cJSON_IsNumber(code) && code->valueint == -32600 ? 400 : 200;
        _cleanup_free_ char *text = cJSON_PrintUnformatted(msg);
        if (!text)
                return -ENOMEM;
        if (session)
                add_header(ret, "Mcp-Session-Id", session);
        return reply_text(ret, status, text);
}

static int reply(struct mcp_http_response *ret, const cJSON *id, cJSON *result, int code,
                 const char *msg, const char *session)
{
        return reply_message(ret, mcp_rpc_message(id, result, code, msg), session);
}

/* ---- methods ---- */

static cJSON *initialize_result(const cJSON *params)
{
        static const char *const versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
        const char *ver = MCP_PROTOCOL_LATEST;
        for (size_t i = 0; cJSON_IsString(v) && i < ELEMENTSOF(versions); i++)
                if (strcmp(v->valuestring, versions[i]) == 0)
                        ver = versions[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "protocolVersion", ver);
        cJSON *caps = cJSON_AddObjectToObject(o, "capabilities");
        cJSON_AddObjectToObject(caps, "tools");
        cJSON *info = cJSON_AddObjectToObject(o, "serverInfo");
        cJSON_AddStringToObject(info, "name", "sbx");
        cJSON_AddStringToObject(info, "version", "0.1.0");
        cJSON_AddStringToObject(
            o, "instructions",
            "Tools that run code in one isolated sandbox per session: run_python and run_node "
            "(persistent kernels: variables, functions and imports survive between calls), "
            "run_shell, install_package, put_file/upload_file and get_file. Files and installed "
            "packages persist for the session; after the idle timeout (10 minutes by default) "
            "the sandbox is reaped and the next call starts a fresh one (the result says so). "
            "Process large files with code in the sandbox; never read them into the "
            "conversation.");
        return o;
}

static const char *header(const struct mcp_http_request *req, const char *name)
{
        return req->header ? req->header(req->ctx, name) : NULL;
}

static int handle_initialize(struct mcp *m, const struct mcp_http_request *req,
                             struct mcp_http_response *ret, const cJSON *id, const cJSON *params)
{
        char sid[MCP_SESSION_ID_MAX];
        int idle = m->idle_default_s;
        const char *h = header(req, "Sbx-Mcp-Idle-Timeout");
        if (h) {
                long v = strtol(h, NULL, 10);
                if (v < 1 || v > 86400)
                        return reply(ret, id, NULL, -32602,
                                     "Sbx-Mcp-Idle-Timeout must be 1..86400 seconds", NULL);
                idle = (int)v;
        }
        if (mcp_session_new(m, idle, req->session_prefix, sid) < 0)
                return reply(ret, id, NULL, -32603, "cannot create a session", NULL);
        return reply(ret, id, initialize_result(params), 0, NULL, sid);
}

static int dispatch(struct mcp *m, const struct mcp_http_request *req,
                    struct mcp_http_response *ret, const struct mcp_rpc *rpc)
{
        const cJSON *id = rpc->id, *params = rpc->params;
        bool notification = !id;
        if (!rpc->method) {
                if (rpc->response) /* a response to us: none asked */
                        return reply_text(ret, 202, "{}");
                return reply(ret, id, NULL, -32600, "invalid request: method is required", NULL);
        }
        const char *method = rpc->method;
        if (strcmp(method, "initialize") == 0)
                return handle_initialize(m, req, ret, id, params);
        const char *sid = header(req, "Mcp-Session-Id");
        if (!sid)
                return reply(ret, id, NULL, -32600, "Mcp-Session-Id header is required", NULL);
        if (strcmp(method, "tools/call") == 0 && !notification) {
                const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
                const cJSON *token = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
                const char *accept = header(req, "Accept");
                if ((cJSON_IsString(token) || cJSON_IsNumber(token)) && accept &&
                    strstr(accept, "text/event-stream") &&
                    mcp_session_touch(m, sid, NULL, false) == 0) {
                        int r = mcp_sse_start(m, sid, id, params, token, &ret->sse);
                        if (r == -EAGAIN)
                                return reply_error(ret, 503, "unavailable",
                                                   "cannot start the call");
                        if (r < 0)
                                return r;
                        ret->status = 200;
                        ret->content_type = "text/event-stream";
                        add_header(ret, "Cache-Control", "no-cache");
                        return 0;
                }
                cJSON *answer = mcp_session_call(m, sid, id, params);
                if (!answer)
                        return reply_unknown_session(ret);
                return reply_message(ret, answer, NULL);
        }
        /* Everything else answers at once, even while a call runs. */
        const cJSON *rid = notification && strcmp(method, "notifications/cancelled") == 0
                               ? cJSON_GetObjectItemCaseSensitive(params, "requestId")
                               : NULL;
        _cleanup_free_ char *cancel_id = rid ? cJSON_PrintUnformatted(rid) : NULL;
        if (mcp_session_touch(m, sid, cancel_id, false) < 0)
                return reply_unknown_session(ret);
        if (notification)
                return reply_text(ret, 202, "{}");
        if (strcmp(method, "ping") == 0)
                return reply(ret, id, cJSON_CreateObject(), 0, NULL, NULL);
        if (strcmp(method, "tools/list") == 0) {
                cJSON *r = cJSON_CreateObject();
                cJSON_AddItemToObject(r, "tools", mcp_tools_list());
                return reply(ret, id, r, 0, NULL, NULL);
        }
        return reply(ret, id, NULL, -32601, "method not found", NULL);
}

int mcp_handle(struct mcp *m, const struct mcp_http_request *req, struct mcp_http_response *ret)
{
        *ret = (struct mcp_http_response){0};
        if (strcmp(req->method, "DELETE") == 0) {
                const char *sid = header(req, "Mcp-Session-Id");
                /* A code call in flight is interrupted rather than waited for. */
                (void)mcp_session_touch(m, sid, NULL, true);
                struct mcp_session *s = mcp_session_get(m, sid);
                if (!s)
                        return reply_error(ret, 404, "not_found", "unknown MCP session");
                mcp_session_end(m, s);
                ret->status = 204;
                return 0;
        }
        if (strcmp(req->method, "POST") != 0) {
                add_header(ret, "Allow", "POST, DELETE");
                return reply_error(ret, 405, "method_not_allowed",
                                   "POST JSON-RPC messages to /mcp (no server-sent stream)");
        }
        struct mcp_rpc rpc;
        const char *msg = NULL;
        int code = mcp_rpc_parse(req->body, req->len, &rpc, &msg);
        if (code != 0)
                return reply(ret, NULL, NULL, code, msg, NULL);
        int r = dispatch(m, req, ret, &rpc);
        mcp_rpc_done(&rpc);
        return r;
}
