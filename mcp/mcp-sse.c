/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tools/call answered as a server-sent event stream (MCP streamable HTTP): the call runs in
 * a worker thread (mcp_session_call, which waits for the session's call lock as a JSON call
 * does) while the host's thread reading the stream (mcp_sse_read() blocks) gets
 * `notifications/progress` for the client's progressToken every
 * MCP_PROGRESS_INTERVAL_MS, then the call's answer as the last event. A client that asked for
 * progress may keep a long call alive with it (the TypeScript SDK's resetTimeoutOnProgress).
 * A client that goes away cancels the call, as notifications/cancelled would.
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
#include "time-util.h"

struct mcp_sse {
        struct mcp *m;
        char sid[MCP_SESSION_ID_MAX];
        cJSON *id, *params, *token; /* copies */
        pthread_t worker;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        cJSON *answer; /* set by the worker, under lock */
        bool done;     /* under lock */
        char *out;     /* the event being sent */
        size_t out_len, out_off;
        bool last_queued;
        int64_t t0_ms;
};

static void *worker_main(void *arg)
{
        struct mcp_sse *c = arg;
        cJSON *a = mcp_session_call(c->m, c->sid, c->id, c->params);
        if (!a)
                a = mcp_rpc_message(c->id, NULL, -32600,
                                    "unknown or ended MCP session: initialize a new one");
        pthread_mutex_lock(&c->lock);
        c->answer = a;
        c->done = true;
        pthread_cond_broadcast(&c->cond);
        pthread_mutex_unlock(&c->lock);
        return NULL;
}

/* One SSE event carrying a JSON-RPC message (cJSON escapes newlines inside strings). */
static int set_event(struct mcp_sse *c, const cJSON *msg)
{
        _cleanup_free_ char *text = msg ? cJSON_PrintUnformatted(msg) : NULL;
        free(c->out);
        c->out = NULL;
        c->out_len = c->out_off = 0;
        if (!text)
                return -ENOMEM;
        int n = asprintf(&c->out, "event: message\ndata: %s\n\n", text);
        if (n < 0) {
                c->out = NULL;
                return -ENOMEM;
        }
        c->out_len = (size_t)n;
        return 0;
}

static cJSON *progress_message(const struct mcp_sse *c, int64_t elapsed_ms)
{
        char msg[64];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "jsonrpc", "2.0");
        cJSON_AddStringToObject(o, "method", "notifications/progress");
        cJSON *p = cJSON_AddObjectToObject(o, "params");
        cJSON_AddItemToObject(p, "progressToken", cJSON_Duplicate(c->token, 1));
        cJSON_AddNumberToObject(p, "progress", (double)elapsed_ms / 1000.0);
        snprintf(msg, sizeof(msg), "running for %lld s", (long long)(elapsed_ms / 1000));
        cJSON_AddStringToObject(p, "message", msg);
        return o;
}

ssize_t mcp_sse_read(struct mcp_sse *c, char *buf, size_t max)
{
        for (;;) {
                if (c->out_off < c->out_len) {
                        size_t k = MIN(max, c->out_len - c->out_off);
                        memcpy(buf, c->out + c->out_off, k);
                        c->out_off += k;
                        return (ssize_t)k;
                }
                if (c->last_queued)
                        return 0;
                /* Wait for the answer until the next progress tick. */
                int64_t elapsed = now_ms() - c->t0_ms;
                int64_t tick = (elapsed / MCP_PROGRESS_INTERVAL_MS + 1) * MCP_PROGRESS_INTERVAL_MS;
                struct timespec until = timespec_in_ms(CLOCK_REALTIME, tick - elapsed);
                pthread_mutex_lock(&c->lock);
                while (!c->done && pthread_cond_timedwait(&c->cond, &c->lock, &until) != ETIMEDOUT)
                        ;
                bool done = c->done;
                pthread_mutex_unlock(&c->lock);
                int r;
                if (done) {
                        r = set_event(c, c->answer);
                        c->last_queued = true;
                } else {
                        cJSON *p = progress_message(c, now_ms() - c->t0_ms);
                        r = set_event(c, p);
                        cJSON_Delete(p);
                }
                if (r < 0)
                        return r;
        }
}

void mcp_sse_free(struct mcp_sse *c)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        bool done = c->done;
        pthread_mutex_unlock(&c->lock);
        if (!done) /* the client left: interrupt the call rather than wait for it */
                (void)mcp_session_cancel(c->m, c->sid, c->id);
        pthread_join(c->worker, NULL);
        pthread_mutex_destroy(&c->lock);
        pthread_cond_destroy(&c->cond);
        cJSON_Delete(c->id);
        cJSON_Delete(c->params);
        cJSON_Delete(c->token);
        cJSON_Delete(c->answer);
        free(c->out);
        free(c);
}

int mcp_sse_start(struct mcp *m, const char *sid, const cJSON *id, const cJSON *params,
                  const cJSON *token, struct mcp_sse **ret)
{
        struct mcp_sse *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->m = m;
        snprintf(c->sid, sizeof(c->sid), "%s", sid);
        c->id = cJSON_Duplicate(id, 1);
        c->params = cJSON_Duplicate(params, 1);
        c->token = cJSON_Duplicate(token, 1);
        c->t0_ms = now_ms();
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->cond, NULL);
        int e = c->id && c->params && c->token ? pthread_create(&c->worker, NULL, worker_main, c)
                                               : ENOMEM;
        if (e != 0) {
                log_warning("mcp: cannot start the call: %s", strerror(e));
                pthread_mutex_destroy(&c->lock);
                pthread_cond_destroy(&c->cond);
                cJSON_Delete(c->id);
                cJSON_Delete(c->params);
                cJSON_Delete(c->token);
                free(c);
                return -EAGAIN;
        }
        *ret = c;
        return 0;
}
