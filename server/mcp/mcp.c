/* SPDX-License-Identifier: Apache-2.0 */
#include "mcp/mcp.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "mcp/mcp-tools.h"
#include "random-util.h"
#include "native/v1.h"
#include "core/validate.h"

struct mcp_session {
        char id[33]; /* "" = free slot */
        char sandbox_id[32];
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

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mcp_session sessions[MCP_MAX_SESSIONS];
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_table(void)
{
        for (size_t i = 0; i < ELEMENTSOF(sessions); i++)
                pthread_mutex_init(&sessions[i].call_lock, NULL);
}

static int idle_default(void)
{
        const char *e = getenv("SBX_MCP_IDLE_TIMEOUT_S");
        long v = e ? strtol(e, NULL, 10) : 0;
        return v >= 1 && v <= 86400 ? (int)v : MCP_IDLE_DEFAULT_S;
}

/* ---- JSON-RPC answers ---- */

cJSON *mcp_rpc_message(const cJSON *id, cJSON *result, int code, const char *msg)
{
        cJSON *o = cJSON_CreateObject();
        if (!o) {
                cJSON_Delete(result);
                return NULL;
        }
        cJSON_AddStringToObject(o, "jsonrpc", "2.0");
        cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
        if (result)
                cJSON_AddItemToObject(o, "result", result);
        else {
                cJSON *e = cJSON_AddObjectToObject(o, "error");
                cJSON_AddNumberToObject(e, "code", code);
                cJSON_AddStringToObject(e, "message", msg);
        }
        return o;
}

static enum MHD_Result reply_message(struct request *req, cJSON *o, const char *session)
{
        _cleanup_json_ cJSON *m = o;
        if (!m)
                return MHD_NO;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(m, "error");
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
        unsigned status = cJSON_IsNumber(code) && code->valueint == -32600 ? 400 : 200;
        return v1_reply_json(req, status, m, session ? "Mcp-Session-Id" : NULL, session);
}

static enum MHD_Result reply(struct request *req, const cJSON *id, cJSON *result, int code,
                             const char *msg, const char *session)
{
        return reply_message(req, mcp_rpc_message(id, result, code, msg), session);
}

/* ---- sessions ---- */

static int session_new(struct server *srv, int idle_s, char ret_id[static 33])
{
        char id[33];
        int r = random_hex(id, 16);
        if (r < 0)
                return r;
        struct mcp_session *victim = NULL, *s;
        char kill_id[32] = "";
        pthread_mutex_lock(&table_lock);
        for (size_t i = 0; i < ELEMENTSOF(sessions); i++) {
                s = &sessions[i];
                if (!s->id[0]) {
                        victim = s;
                        break;
                }
                if (!victim || s->last_used < victim->last_used)
                        victim = s;
        }
        if (victim->id[0])
                snprintf(kill_id, sizeof(kill_id), "%s", victim->sandbox_id);
        snprintf(victim->id, sizeof(victim->id), "%s", id);
        victim->sandbox_id[0] = 0;
        victim->had_sandbox = false;
        victim->inflight[0] = 0;
        memset(victim->cancelled, 0, sizeof(victim->cancelled));
        victim->idle_s = idle_s;
        victim->last_used = (int64_t)time(NULL);
        pthread_mutex_unlock(&table_lock);
        if (kill_id[0])
                (void)lifecycle_kill(srv, kill_id); /* evicted: its sandbox goes too */
        memcpy(ret_id, id, 33);
        return 0;
}

/* Lock and return the session (its call_lock held), NULL when unknown. */
static struct mcp_session *session_get(const char *id)
{
        struct mcp_session *s = NULL;
        if (!id || strlen(id) != 32)
                return NULL;
        pthread_mutex_lock(&table_lock);
        for (size_t i = 0; i < ELEMENTSOF(sessions) && !s; i++)
                if (strcmp(sessions[i].id, id) == 0)
                        s = &sessions[i];
        pthread_mutex_unlock(&table_lock);
        if (!s)
                return NULL;
        pthread_mutex_lock(&s->call_lock);
        if (strcmp(s->id, id) != 0) { /* evicted meanwhile */
                pthread_mutex_unlock(&s->call_lock);
                return NULL;
        }
        return s;
}

static void session_put(struct mcp_session *s)
{
        pthread_mutex_lock(&table_lock);
        s->last_used = (int64_t)time(NULL);
        pthread_mutex_unlock(&table_lock);
        pthread_mutex_unlock(&s->call_lock);
}

static void session_end(struct server *srv, struct mcp_session *s)
{
        if (s->sandbox_id[0])
                (void)lifecycle_kill(srv, s->sandbox_id);
        pthread_mutex_lock(&table_lock);
        s->id[0] = 0;
        s->sandbox_id[0] = 0;
        pthread_mutex_unlock(&table_lock);
        pthread_mutex_unlock(&s->call_lock);
}

/* A message that needs no sandbox: look the session up (never waiting for its call in
 * flight, which holds call_lock), count it as used, and when cancel_id (the JSON of a request
 * id, from notifications/cancelled) names the call in flight, or cancel_any (the session is
 * ending), flag that call; a cancel_id not in flight is remembered for a call still waiting for
 * the session (MCP_EARLY_CANCELS of them). 0, or -ENOENT for an unknown session. */
static int session_touch(const char *id, const char *cancel_id, bool cancel_any)
{
        int r = -ENOENT;
        if (!id || strlen(id) != 32)
                return r;
        pthread_mutex_lock(&table_lock);
        for (size_t i = 0; i < ELEMENTSOF(sessions); i++) {
                struct mcp_session *s = &sessions[i];
                if (strcmp(s->id, id) != 0)
                        continue;
                r = 0;
                s->last_used = (int64_t)time(NULL);
                if (s->inflight[0] &&
                    (cancel_any || (cancel_id && strcmp(s->inflight, cancel_id) == 0)))
                        atomic_store(&s->cancel, true);
                else if (cancel_id && strlen(cancel_id) < sizeof(s->cancelled[0]))
                        snprintf(s->cancelled[s->cancelled_next++ % MCP_EARLY_CANCELS],
                                 sizeof(s->cancelled[0]), "%s", cancel_id);
                break;
        }
        pthread_mutex_unlock(&table_lock);
        return r;
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

static enum MHD_Result handle_initialize(struct request *req, const cJSON *id, const cJSON *params)
{
        char sid[33];
        int idle = idle_default();
        const char *h = http_header(req, "Sbx-Mcp-Idle-Timeout");
        if (h) {
                long v = strtol(h, NULL, 10);
                if (v < 1 || v > 86400)
                        return reply(req, id, NULL, -32602,
                                     "Sbx-Mcp-Idle-Timeout must be 1..86400 seconds", NULL);
                idle = (int)v;
        }
        if (session_new(req->srv, idle, sid) < 0)
                return reply(req, id, NULL, -32603, "cannot create a session", NULL);
        return reply(req, id, initialize_result(params), 0, NULL, sid);
}

/* One tools/call on s (its call_lock held): the JSON-RPC answer. */
static cJSON *call_message(struct server *srv, struct mcp_session *s, const cJSON *id,
                           const cJSON *params)
{
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
        if (!cJSON_IsString(name))
                return mcp_rpc_message(id, NULL, -32602, "params.name must be a string");
        struct mcp_call c = {
            .srv = srv, .idle_s = s->idle_s, .had_sandbox = s->had_sandbox, .cancel = &s->cancel};
        snprintf(c.sandbox_id, sizeof(c.sandbox_id), "%s", s->sandbox_id);
        cJSON *result = NULL;
        const char *msg = "invalid arguments";
        _cleanup_free_ char *rid = cJSON_PrintUnformatted(id);
        bool early = false;
        pthread_mutex_lock(&table_lock);
        snprintf(s->inflight, sizeof(s->inflight), "%s", rid && strlen(rid) < 72 ? rid : "");
        atomic_store(&s->cancel, false);
        for (size_t i = 0; s->inflight[0] && i < MCP_EARLY_CANCELS; i++)
                if (strcmp(s->cancelled[i], s->inflight) == 0) {
                        s->cancelled[i][0] = 0;
                        early = true;
                }
        pthread_mutex_unlock(&table_lock);
        int r = 0;
        if (early)
                result = mcp_cancelled_result("[cancelled by the client before it started]");
        else
                r = mcp_tools_call(&c, name->valuestring, args, &result, &msg);
        pthread_mutex_lock(&table_lock);
        s->inflight[0] = 0;
        pthread_mutex_unlock(&table_lock);
        snprintf(s->sandbox_id, sizeof(s->sandbox_id), "%s", c.sandbox_id);
        s->had_sandbox = c.had_sandbox;
        if (r < 0)
                return mcp_rpc_message(id, NULL, -32602, msg);
        return mcp_rpc_message(id, result, 0, NULL);
}

cJSON *mcp_session_call(struct server *srv, const char *sid, const cJSON *id, const cJSON *params)
{
        struct mcp_session *s = session_get(sid); /* one call at a time per session */
        if (!s)
                return NULL;
        cJSON *m = call_message(srv, s, id, params);
        session_put(s);
        return m;
}

int mcp_session_cancel(const char *sid, const cJSON *id)
{
        _cleanup_free_ char *want = id ? cJSON_PrintUnformatted(id) : NULL;
        return session_touch(sid, want, false);
}

static enum MHD_Result dispatch(struct request *req, const cJSON *msg)
{
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
        bool notification = !id;
        if (!cJSON_IsString(method)) {
                if (cJSON_GetObjectItemCaseSensitive(msg, "result") ||
                    cJSON_GetObjectItemCaseSensitive(msg, "error"))
                        return http_reply_json(req, 202, "{}"); /* a response to us: none asked */
                return reply(req, id, NULL, -32600, "invalid request: method is required", NULL);
        }
        const char *m = method->valuestring;
        if (strcmp(m, "initialize") == 0)
                return handle_initialize(req, id, params);
        const char *sid = http_header(req, "Mcp-Session-Id");
        if (!sid)
                return reply(req, id, NULL, -32600, "Mcp-Session-Id header is required", NULL);
        if (strcmp(m, "tools/call") == 0 && !notification) {
                const cJSON *meta = cJSON_GetObjectItemCaseSensitive(params, "_meta");
                const cJSON *token = cJSON_GetObjectItemCaseSensitive(meta, "progressToken");
                const char *accept = http_header(req, "Accept");
                if ((cJSON_IsString(token) || cJSON_IsNumber(token)) && accept &&
                    strstr(accept, "text/event-stream") && session_touch(sid, NULL, false) == 0)
                        return mcp_sse_call(req, sid, id, params, token);
                cJSON *answer = mcp_session_call(req->srv, sid, id, params);
                if (!answer)
                        return v1_reply_error(req, 404, "not_found",
                                              "unknown or ended MCP session: initialize a new one");
                return reply_message(req, answer, NULL);
        }
        /* Everything else answers at once, even while a call runs. */
        const cJSON *rid = notification && strcmp(m, "notifications/cancelled") == 0
                               ? cJSON_GetObjectItemCaseSensitive(params, "requestId")
                               : NULL;
        _cleanup_free_ char *cancel_id = rid ? cJSON_PrintUnformatted(rid) : NULL;
        if (session_touch(sid, cancel_id, false) < 0)
                return v1_reply_error(req, 404, "not_found",
                                      "unknown or ended MCP session: initialize a new one");
        if (notification)
                return http_reply_json(req, 202, "{}");
        if (strcmp(m, "ping") == 0)
                return reply(req, id, cJSON_CreateObject(), 0, NULL, NULL);
        if (strcmp(m, "tools/list") == 0) {
                cJSON *r = cJSON_CreateObject();
                cJSON_AddItemToObject(r, "tools", mcp_tools_list());
                return reply(req, id, r, 0, NULL, NULL);
        }
        return reply(req, id, NULL, -32601, "method not found", NULL);
}

enum MHD_Result mcp_handle(struct request *req, const char *body, size_t len)
{
        pthread_once(&init_once, init_table);
        if (strcmp(req->method, "DELETE") == 0) {
                /* A code call in flight is interrupted rather than waited for. */
                (void)session_touch(http_header(req, "Mcp-Session-Id"), NULL, true);
                struct mcp_session *s = session_get(http_header(req, "Mcp-Session-Id"));
                if (!s)
                        return v1_reply_error(req, 404, "not_found", "unknown MCP session");
                session_end(req->srv, s);
                return http_reply_204(req);
        }
        if (strcmp(req->method, "POST") != 0)
                return http_reply_json_hdr(
                    req, 405,
                    "{\"error\":{\"code\":\"method_not_allowed\",\"message\":\"POST "
                    "JSON-RPC messages to /mcp (no server-sent stream)\"}}",
                    "Allow", "POST, DELETE");
        if (json_depth(body ? body : "", len) > JSON_MAX_DEPTH)
                return reply(req, NULL, NULL, -32700, "JSON nested too deeply", NULL);
        _cleanup_json_ cJSON *msg = body ? cJSON_ParseWithLength(body, len) : NULL;
        if (!msg)
                return reply(req, NULL, NULL, -32700, "parse error: the body must be JSON", NULL);
        if (!cJSON_IsObject(msg))
                return reply(req, NULL, NULL, -32600,
                             "invalid request: send one JSON-RPC message (no batches)", NULL);
        return dispatch(req, msg);
}
