/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MCP's sessions (mcp-internal.h): the table of at most MCP_MAX_SESSIONS, each with its lazily
 * created sandbox, its call lock (one tools/call at a time), the call in flight and the cancels
 * that arrived for calls still waiting. The HTTP entry (mcp.c) and the SSE answer (mcp-sse.c)
 * both run calls through here.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macros.h"
#include "mcp-internal.h"
#include "random-util.h"

/* A session id as the host sent it: its prefix (any, up to MCP_SESSION_PREFIX_MAX) and 32 hex
 * digits. */
static bool id_plausible(const char *id)
{
        size_t l = id ? strlen(id) : 0;
        return l >= 32 && l < MCP_SESSION_ID_MAX;
}

int mcp_session_new(struct mcp *m, int idle_s, const char *prefix,
                    char ret_id[static MCP_SESSION_ID_MAX])
{
        char id[MCP_SESSION_ID_MAX];
        size_t pl = prefix ? strlen(prefix) : 0;
        if (pl > MCP_SESSION_PREFIX_MAX ||
            strspn(prefix ? prefix : "",
                   "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != pl)
                pl = 0; /* not a usable prefix: none */
        memcpy(id, prefix ? prefix : "", pl);
        int r = random_hex(id + pl, 16);
        if (r < 0)
                return r;
        struct mcp_session *victim = &m->sessions[0], *s; /* a free slot, else the oldest */
        char kill_id[MCP_SANDBOX_ID_MAX] = "";
        pthread_mutex_lock(&m->table_lock);
        for (size_t i = 0; i < ELEMENTSOF(m->sessions); i++) {
                s = &m->sessions[i];
                if (!s->id[0]) {
                        victim = s;
                        break;
                }
                if (s->last_used < victim->last_used)
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
        pthread_mutex_unlock(&m->table_lock);
        if (kill_id[0])
                (void)m->host.kill(m->host.ctx, kill_id); /* evicted: its sandbox goes too */
        snprintf(ret_id, MCP_SESSION_ID_MAX, "%s", id);
        return 0;
}

/* Lock and return the session (its call_lock held), NULL when unknown. */
struct mcp_session *mcp_session_get(struct mcp *m, const char *id)
{
        struct mcp_session *s = NULL;
        if (!id_plausible(id))
                return NULL;
        pthread_mutex_lock(&m->table_lock);
        for (size_t i = 0; i < ELEMENTSOF(m->sessions) && !s; i++)
                if (strcmp(m->sessions[i].id, id) == 0)
                        s = &m->sessions[i];
        pthread_mutex_unlock(&m->table_lock);
        if (!s)
                return NULL;
        pthread_mutex_lock(&s->call_lock);
        if (strcmp(s->id, id) != 0) { /* evicted meanwhile */
                pthread_mutex_unlock(&s->call_lock);
                return NULL;
        }
        return s;
}

void mcp_session_put(struct mcp *m, struct mcp_session *s)
{
        pthread_mutex_lock(&m->table_lock);
        s->last_used = (int64_t)time(NULL);
        pthread_mutex_unlock(&m->table_lock);
        pthread_mutex_unlock(&s->call_lock);
}

void mcp_session_end(struct mcp *m, struct mcp_session *s)
{
        if (s->sandbox_id[0])
                (void)m->host.kill(m->host.ctx, s->sandbox_id);
        pthread_mutex_lock(&m->table_lock);
        s->id[0] = 0;
        s->sandbox_id[0] = 0;
        pthread_mutex_unlock(&m->table_lock);
        pthread_mutex_unlock(&s->call_lock);
}

/* A message that needs no sandbox: look the session up (never waiting for its call in
 * flight, which holds call_lock), count it as used, and when cancel_id (the JSON of a request
 * id, from notifications/cancelled) names the call in flight, or cancel_any (the session is
 * ending), flag that call; a cancel_id not in flight is remembered for a call still waiting for
 * the session (MCP_EARLY_CANCELS of them). 0, or -ENOENT for an unknown session. */
int mcp_session_touch(struct mcp *m, const char *id, const char *cancel_id, bool cancel_any)
{
        int r = -ENOENT;
        if (!id_plausible(id))
                return r;
        pthread_mutex_lock(&m->table_lock);
        for (size_t i = 0; i < ELEMENTSOF(m->sessions); i++) {
                struct mcp_session *s = &m->sessions[i];
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
        pthread_mutex_unlock(&m->table_lock);
        return r;
}

/* One tools/call on s (its call_lock held): the JSON-RPC answer. */
static cJSON *call_message(struct mcp *m, struct mcp_session *s, const cJSON *id,
                           const cJSON *params)
{
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
        if (!cJSON_IsString(name))
                return mcp_rpc_message(id, NULL, -32602, "params.name must be a string");
        struct mcp_call c = {
            .m = m, .idle_s = s->idle_s, .had_sandbox = s->had_sandbox, .cancel = &s->cancel};
        snprintf(c.sandbox_id, sizeof(c.sandbox_id), "%s", s->sandbox_id);
        cJSON *result = NULL;
        const char *msg = "invalid arguments";
        _cleanup_free_ char *rid = cJSON_PrintUnformatted(id);
        bool early = false;
        pthread_mutex_lock(&m->table_lock);
        snprintf(s->inflight, sizeof(s->inflight), "%s", rid && strlen(rid) < 72 ? rid : "");
        atomic_store(&s->cancel, false);
        for (size_t i = 0; s->inflight[0] && i < MCP_EARLY_CANCELS; i++)
                if (strcmp(s->cancelled[i], s->inflight) == 0) {
                        s->cancelled[i][0] = 0;
                        early = true;
                }
        pthread_mutex_unlock(&m->table_lock);
        int r = 0;
        if (early)
                result = mcp_cancelled_result("[cancelled by the client before it started]");
        else
                r = mcp_tools_call(&c, name->valuestring, args, &result, &msg);
        pthread_mutex_lock(&m->table_lock);
        s->inflight[0] = 0;
        pthread_mutex_unlock(&m->table_lock);
        snprintf(s->sandbox_id, sizeof(s->sandbox_id), "%s", c.sandbox_id);
        s->had_sandbox = c.had_sandbox;
        if (r < 0)
                return mcp_rpc_message(id, NULL, -32602, msg);
        return mcp_rpc_message(id, result, 0, NULL);
}

cJSON *mcp_session_call(struct mcp *m, const char *sid, const cJSON *id, const cJSON *params)
{
        struct mcp_session *s = mcp_session_get(m, sid); /* one call at a time per session */
        if (!s)
                return NULL;
        cJSON *a = call_message(m, s, id, params);
        mcp_session_put(m, s);
        return a;
}

int mcp_session_cancel(struct mcp *m, const char *sid, const cJSON *id)
{
        _cleanup_free_ char *want = id ? cJSON_PrintUnformatted(id) : NULL;
        return mcp_session_touch(m, sid, want, false);
}
