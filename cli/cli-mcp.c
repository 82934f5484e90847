/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sbx mcp`: MCP over stdio, bridged to sbxd's /mcp (streamable HTTP). Each line on stdin is
 * one JSON-RPC message, POSTed with the session id sbxd issued at initialize; each answer is
 * one line on stdout. The tools, the session and its sandbox live in sbxd (server/mcp/mcp.h).
 *
 * tools/call requests are forwarded in order by one worker thread, so that the reader goes on:
 * a ping, tools/list or a notifications/cancelled from the client reaches sbxd while a long
 * tool call runs (sbxd answers those at once). Answers are written whole, one line each, as
 * they come back. EOF on stdin lets the queued calls finish, then ends the session
 * (DELETE /mcp); SIGTERM, SIGINT or SIGHUP ends it at once (a code call in flight is
 * interrupted) and exits 128 + the signal. SBX_MCP_IDLE_TIMEOUT_S is passed on.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "macros.h"

struct bridge {
        struct cli *c;
        pthread_mutex_t lock; /* stdout, session, the queue */
        pthread_cond_t done;  /* the queue changed */
        char session[128];    /* "Mcp-Session-Id: ..." once issued */
        char idle[96];        /* "Sbx-Mcp-Idle-Timeout: ..." for initialize */
};

static void emit(struct bridge *b, const char *text, size_t len)
{
        pthread_mutex_lock(&b->lock);
        fwrite(text, 1, len, stdout);
        fputc('\n', stdout);
        fflush(stdout);
        pthread_mutex_unlock(&b->lock);
}

/* A JSON-RPC error answer for a message sbxd could not answer itself. */
static void rpc_error(struct bridge *b, const char *line, const char *msg)
{
        cJSON *in = cJSON_Parse(line), *o = cJSON_CreateObject();
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(in, "id");
        if (id && o) {
                cJSON_AddStringToObject(o, "jsonrpc", "2.0");
                cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
                cJSON *e = cJSON_AddObjectToObject(o, "error");
                cJSON_AddNumberToObject(e, "code", -32603);
                cJSON_AddStringToObject(e, "message", msg);
                char *t = cJSON_PrintUnformatted(o);
                if (t)
                        emit(b, t, strlen(t));
                free(t);
        }
        cJSON_Delete(in);
        cJSON_Delete(o);
}

/* POST one message and write sbxd's answer (or an error of our own). */
static void forward(struct bridge *b, const char *line)
{
        char extra[128];
        struct cli_resp r;
        pthread_mutex_lock(&b->lock);
        snprintf(extra, sizeof(extra), "%s", b->session[0] ? b->session : b->idle);
        pthread_mutex_unlock(&b->lock);
        if (cli_http(b->c, "POST", "/mcp", "application/json", line, strlen(line),
                     extra[0] ? extra : NULL, &r) < 0) {
                rpc_error(b, line, "sbxd is not reachable");
                cli_resp_done(&r);
                return;
        }
        if (r.session[0]) {
                pthread_mutex_lock(&b->lock);
                snprintf(b->session, sizeof(b->session), "Mcp-Session-Id: %s", r.session);
                pthread_mutex_unlock(&b->lock);
        }
        if (r.status == 200 && r.len)
                emit(b, r.body, r.len);
        else if (r.status >= 400) {
                cJSON *o = cJSON_Parse(r.body);
                if (cJSON_GetObjectItemCaseSensitive(o, "jsonrpc"))
                        emit(b, r.body, r.len);
                else
                        rpc_error(b, line,
                                  r.status == 404 ? "the MCP session ended: initialize again"
                                                  : "sbxd refused the message");
                cJSON_Delete(o);
        }
        cli_resp_done(&r);
}

struct call {
        struct call *next;
        char line[];
};

struct queue {
        struct bridge *b;
        struct call *head, **tail;
        bool eof;
};

static void *calls_main(void *arg)
{
        struct queue *q = arg;
        struct bridge *b = q->b;
        for (;;) {
                pthread_mutex_lock(&b->lock);
                while (!q->head && !q->eof)
                        pthread_cond_wait(&b->done, &b->lock);
                struct call *c = q->head;
                if (c && !(q->head = c->next))
                        q->tail = &q->head;
                pthread_mutex_unlock(&b->lock);
                if (!c)
                        return NULL;
                forward(b, c->line);
                free(c);
        }
}

/* A tools/call request: queued for the calls thread. */
static bool is_call(const char *line)
{
        cJSON *o = cJSON_Parse(line);
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "method");
        bool r = cJSON_GetObjectItemCaseSensitive(o, "id") && cJSON_IsString(m) &&
                 strcmp(m->valuestring, "tools/call") == 0;
        cJSON_Delete(o);
        return r;
}

static void enqueue(struct queue *q, const char *line)
{
        size_t n = strlen(line);
        struct call *c = malloc(sizeof(*c) + n + 1);
        if (!c) {
                rpc_error(q->b, line, "out of memory");
                return;
        }
        c->next = NULL;
        memcpy(c->line, line, n + 1);
        pthread_mutex_lock(&q->b->lock);
        *q->tail = c;
        q->tail = &c->next;
        pthread_cond_broadcast(&q->b->done);
        pthread_mutex_unlock(&q->b->lock);
}

static void end_session(struct bridge *b)
{
        char session[128];
        pthread_mutex_lock(&b->lock);
        snprintf(session, sizeof(session), "%s", b->session);
        pthread_mutex_unlock(&b->lock);
        if (session[0]) {
                struct cli_resp r;
                (void)cli_http(b->c, "DELETE", "/mcp", NULL, NULL, 0, session, &r);
                cli_resp_done(&r);
        }
}

static sigset_t stop_signals;

static void *signals_main(void *arg)
{
        int sig = 0;
        if (sigwait(&stop_signals, &sig) == 0) {
                end_session(arg);
                _exit(128 + sig);
        }
        return NULL;
}

int cli_cmd_mcp(struct cli *c, int argc, char **argv)
{
        struct bridge b = {.c = c};
        struct queue q = {.b = &b, .tail = &q.head};
        pthread_t calls, signals;
        char *line = NULL;
        size_t cap = 0;
        const char *it = getenv("SBX_MCP_IDLE_TIMEOUT_S");

        pthread_mutex_init(&b.lock, NULL);
        pthread_cond_init(&b.done, NULL);
        if (it && *it)
                snprintf(b.idle, sizeof(b.idle), "Sbx-Mcp-Idle-Timeout: %.32s", it);
        sigemptyset(&stop_signals);
        sigaddset(&stop_signals, SIGTERM);
        sigaddset(&stop_signals, SIGINT);
        sigaddset(&stop_signals, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
        if (pthread_create(&signals, NULL, signals_main, &b) != 0 ||
            pthread_create(&calls, NULL, calls_main, &q) != 0) {
                fprintf(stderr, "sbx mcp: cannot start threads\n");
                return 1;
        }
        pthread_detach(signals);
        while (getline(&line, &cap, stdin) >= 0) {
                line[strcspn(line, "\r\n")] = 0;
                if (!*line)
                        continue;
                if (is_call(line))
                        enqueue(&q, line);
                else
                        forward(&b, line);
        }
        free(line);
        pthread_mutex_lock(&b.lock);
        q.eof = true;
        pthread_cond_broadcast(&b.done);
        pthread_mutex_unlock(&b.lock);
        pthread_join(calls, NULL);
        end_session(&b);
        return 0;
}
