/* SPDX-License-Identifier: Apache-2.0 */
#include "interp/code-exec.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "fd-util.h"
#include "macros.h"
#include "time-util.h"

#define READ_BUDGET (256u * 1024u) /* per fd and wake-up: output cannot starve the rest */

struct stream {
        const char *type; /* "stdout" / "stderr" */
        struct buf pend;  /* bytes not sent yet (a partial line, at most) */
        char ts[40];      /* when the first pending byte was read */
        int64_t since_ms; /* 0 when pend is empty */
};

struct pump {
        struct agent_request *r;
        struct code_kernel *k;
        struct buf out; /* NDJSON lines not yet written to the client */
        struct stream so, se;
        bool client_gone, done, dead, out_eof, err_eof;
        int64_t last_write_ms, kill_at_ms;
        int shell_status;
};

static void interrupt(struct pump *p)
{
        if (p->kill_at_ms)
                return;
        code_kernel_signal(p->k, SIGINT);
        p->kill_at_ms = now_ms() + CODE_INTERRUPT_GRACE_MS;
}

static void client_left(struct pump *p)
{
        if (p->client_gone)
                return;
        p->client_gone = true;
        interrupt(p);
}

static void emit(struct pump *p, const char *line, size_t n)
{
        if (p->client_gone)
                return;
        if (buf_add(&p->out, line, n) < 0 || buf_add(&p->out, "\n", 1) < 0)
                client_left(p);
}

static void flush_out(struct pump *p)
{
        if (p->client_gone || p->out.len == 0)
                return;
        if (agent_respond_data(p->r, p->out.p, p->out.len) < 0)
                client_left(p);
        p->out.len = 0;
        p->last_write_ms = now_ms();
}

static void stream_emit(struct pump *p, struct stream *s, size_t n)
{
        struct buf line = {0};

        if (n == 0)
                return;
        if (buf_printf(&line, "{\"type\":\"%s\",\"text\":", s->type) >= 0 &&
            json_add_string(&line, s->pend.p, n) >= 0 &&
            buf_printf(&line, ",\"timestamp\":\"%s\"}", s->ts) >= 0)
                emit(p, line.p, line.len);
        buf_done(&line);
        buf_consume(&s->pend, n);
        s->since_ms = s->pend.len ? now_ms() : 0;
}

/* Send the complete lines at once; a partial tail waits CODE_TAIL_HOLD_MS for its newline
 * (print() writes text and "\n" separately) unless it grew large. */
static void stream_feed(struct pump *p, struct stream *s, const char *data, size_t n)
{
        char *nl;

        if (n == 0)
                return;
        if (s->pend.len == 0) {
                iso_timestamp(s->ts);
                s->since_ms = now_ms();
        }
        if (buf_add(&s->pend, data, n) < 0) {
                client_left(p);
                return;
        }
        nl = memrchr(s->pend.p, '\n', s->pend.len);
        if (nl)
                stream_emit(p, s, (size_t)(nl - s->pend.p) + 1);
        if (s->pend.len >= CODE_STREAM_CHUNK)
                stream_emit(p, s, utf8_complete_prefix(s->pend.p, s->pend.len));
}

static void stream_tick(struct pump *p, struct stream *s, bool all)
{
        if (s->pend.len == 0)
                return;
        if (all)
                stream_emit(p, s, s->pend.len);
        else if (now_ms() - s->since_ms >= CODE_TAIL_HOLD_MS)
                stream_emit(p, s, utf8_complete_prefix(s->pend.p, s->pend.len));
}

/* A shell kernel's stderr: user bytes go to the stream, the marker of the current line ends
 * the run. */
static void shell_stderr(struct pump *p, const char *data, size_t n)
{
        struct code_kernel *k = p->k;
        size_t start, end;
        unsigned seq;
        int status;

        if (buf_add(&k->rbuf, data, n) < 0) {
                client_left(p);
                return;
        }
        while (k->rbuf.len) {
                int found =
                    bash_marker_scan(k->rbuf.p, k->rbuf.len, k->nonce, &start, &end, &seq, &status);
                stream_feed(p, &p->se, k->rbuf.p, start);
                if (!found) {
                        buf_consume(&k->rbuf, start);
                        return;
                }
                buf_consume(&k->rbuf, end);
                if (seq == k->seq) {
                        p->done = true;
                        p->shell_status = status;
                }
        }
}

/* Read what fd has (bounded). Sets *eof at end of file. */
static void read_pipe(struct pump *p, int fd, bool is_err, bool *eof)
{
        char buf[16384];
        size_t total = 0;

        if (fd < 0 || *eof)
                return;
        while (total < READ_BUDGET) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0 || (n < 0 && errno != EAGAIN)) {
                        *eof = true;
                        return;
                }
                if (n < 0)
                        return;
                total += (size_t)n;
                if (is_err && p->k->lang->transport == CODE_TRANSPORT_SHELL)
                        shell_stderr(p, buf, (size_t)n);
                else
                        stream_feed(p, is_err ? &p->se : &p->so, buf, (size_t)n);
        }
}

/* Output written before a protocol line must reach the client before it. */
static void drain_output(struct pump *p)
{
        read_pipe(p, p->k->out_fd, false, &p->out_eof);
        read_pipe(p, p->k->err_fd, true, &p->err_eof);
        stream_tick(p, &p->so, true);
        stream_tick(p, &p->se, true);
}

/* "1"/"2" + a JSON string: text the kernel's own print()/console wrote (the socket keeps it in
 * order with the results; the pipes carry what subprocesses write). */
static void kernel_text(struct pump *p, struct stream *s, const char *json, size_t n)
{
        cJSON *j = cJSON_ParseWithLength(json, n);
        if (cJSON_IsString(j))
                stream_feed(p, s, j->valuestring, strlen(j->valuestring));
        cJSON_Delete(j);
}

static void kernel_line(struct pump *p, const char *line, size_t n)
{
        switch (line[0]) {
        case '1':
        case '2':
                kernel_text(p, line[0] == '1' ? &p->so : &p->se, line + 1, n - 1);
                break;
        case 'R':
                drain_output(p);
                emit(p, line + 1, n - 1);
                break;
        case 'D':
                p->done = true; /* finish() drains the pipes */
                break;
        default:
                break; /* 'Y' and anything unknown */
        }
}

static void read_sock(struct pump *p)
{
        struct code_kernel *k = p->k;
        char buf[65536];

        for (;;) {
                ssize_t n = read(k->sock, buf, sizeof(buf));
                char *nl;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n <= 0) {
                        p->dead = true;
                        return;
                }
                if (k->rbuf.len + (size_t)n > CODE_MAX_KERNEL_LINE ||
                    buf_add(&k->rbuf, buf, (size_t)n) < 0) {
                        p->dead = true; /* an unbounded line: the kernel is killed */
                        return;
                }
                while (!p->done && (nl = memchr(k->rbuf.p, '\n', k->rbuf.len))) {
                        size_t len = (size_t)(nl - k->rbuf.p);
                        if (len)
                                kernel_line(p, k->rbuf.p, len);
                        buf_consume(&k->rbuf, len + 1);
                }
                if (p->done || (size_t)n < sizeof(buf))
                        return;
        }
}

/* The whole global env for the first request (the Java kernel mirrors it into system
 * properties, as E2B's does), then only when it changed since (sbxd re-/init-ed a pooled
 * sandbox). */
static cJSON *genv_update(struct code_kernel *k)
{
        _cleanup_strv_free_ char **cur = NULL;
        size_t i = 0;
        cJSON *o;

        if (agent_config_envs(&cur) < 0)
                return NULL;
        for (; cur[i] && k->genv && k->genv[i]; i++)
                if (strcmp(cur[i], k->genv[i]) != 0)
                        break;
        if (k->genv_sent && !cur[i] && (!k->genv || !k->genv[i]))
                return NULL;
        k->genv_sent = true;
        o = cJSON_CreateObject();
        for (char **e = cur; o && *e; e++) {
                char *eq = strchr(*e, '=');
                *eq = '\0';
                cJSON_AddStringToObject(o, *e, eq + 1);
                *eq = '=';
        }
        strv_free(k->genv);
        k->genv = TAKE_PTR(cur);
        return o;
}

static bool env_name_ok(const char *s)
{
        if (!s || !*s || (*s >= '0' && *s <= '9'))
                return false;
        for (; *s; s++)
                if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9')))
                        return false;
        return true;
}

/* A shell kernel's request: one command line (code-lang.h, CODE_TRANSPORT_SHELL). */
static int shell_request(struct code_kernel *k, const struct code_exec *x, struct buf *b)
{
        const cJSON *v;
        int e = buf_printf(b, "__sbx_run %u ", ++k->seq);

        if (e >= 0)
                e = bash_quote(b, x->code, x->code_len);
        cJSON_ArrayForEach(v, x->env_vars)
        {
                if (!cJSON_IsString(v) || !env_name_ok(v->string))
                        continue; /* never let a key reach the command line unquoted */
                if (e >= 0)
                        e = buf_printf(b, " %s ", v->string);
                if (e >= 0)
                        e = bash_quote(b, v->valuestring, strlen(v->valuestring));
        }
        return e < 0 ? e : buf_add(b, "\n", 1);
}

static int kernel_request(struct code_kernel *k, const struct code_exec *x, struct buf *b)
{
        if (k->lang->transport == CODE_TRANSPORT_SHELL)
                return shell_request(k, x, b);
        cJSON *o = cJSON_CreateObject();
        cJSON *genv = genv_update(k);
        char *s;
        if (!o)
                return -ENOMEM;
        cJSON_AddItemToObject(o, "code", cJSON_CreateString(x->code));
        if (x->env_vars)
                cJSON_AddItemToObject(o, "env", cJSON_Duplicate(x->env_vars, 1));
        if (genv)
                cJSON_AddItemToObject(o, "genv", genv);
        if (k->lang->dialect)
                cJSON_AddStringToObject(o, "lang", k->lang->dialect);
        s = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!s)
                return -ENOMEM;
        int e = buf_adds(b, s);
        free(s);
        return e < 0 ? e : buf_add(b, "\n", 1);
}

static int poll_timeout(struct pump *p)
{
        int64_t now = now_ms(), t = INT32_MAX;

        if (!p->client_gone)
                t = MIN(t, p->last_write_ms + CODE_KEEPALIVE_MS - now);
        if (p->so.pend.len)
                t = MIN(t, p->so.since_ms + CODE_TAIL_HOLD_MS - now);
        if (p->se.pend.len)
                t = MIN(t, p->se.since_ms + CODE_TAIL_HOLD_MS - now);
        if (p->kill_at_ms)
                t = MIN(t, p->kill_at_ms - now);
        return (int)MAX(t, (int64_t)0);
}

static void pump_once(struct pump *p)
{
        struct code_kernel *k = p->k;
        struct pollfd f[5] = {
            {.fd = k->sock, .events = POLLIN},
            {.fd = p->out_eof ? -1 : k->out_fd, .events = POLLIN},
            {.fd = p->err_eof ? -1 : k->err_fd, .events = POLLIN},
            {.fd = p->client_gone ? -1 : p->r->fd, .events = POLLIN | POLLRDHUP},
            {.fd = k->pidfd, .events = POLLIN},
        };

        if (poll(f, ELEMENTSOF(f), poll_timeout(p)) < 0 && errno != EINTR) {
                p->dead = true;
                return;
        }
        if (f[3].revents)
                client_left(p);
        if (f[1].revents)
                read_pipe(p, k->out_fd, false, &p->out_eof);
        if (f[2].revents)
                read_pipe(p, k->err_fd, true, &p->err_eof);
        if (f[0].revents)
                read_sock(p);
        if (k->sock < 0 && p->err_eof)
                p->dead = true; /* the shell is gone */
        if (f[4].revents && !p->done && !p->dead) {
                /* The kernel exited, though something it started may hold its end of the
                 * protocol open: what it wrote before is all there is. */
                if (k->sock >= 0)
                        read_sock(p);
                else
                        read_pipe(p, k->err_fd, true, &p->err_eof);
                if (!p->done)
                        p->dead = true;
        }
        stream_tick(p, &p->so, false);
        stream_tick(p, &p->se, false);
        if (!p->client_gone && now_ms() - p->last_write_ms >= CODE_KEEPALIVE_MS)
                emit(p, "{\"type\":\"keepalive\"}", 20);
        if (p->kill_at_ms && now_ms() >= p->kill_at_ms && !p->done)
                p->dead = true;
        flush_out(p);
}

static void finish(struct pump *p)
{
        char line[128];

        drain_output(p);
        if (p->dead) {
                code_kernel_signal(p->k, SIGKILL);
                static const char died[] =
                    "{\"type\":\"error\",\"name\":\"ContextRestarting\",\"value\":\"Context was "
                    "restarted: the kernel died; the next execution starts a fresh one\","
                    "\"traceback\":\"\"}";
                emit(p, died, sizeof(died) - 1);
        } else if (p->k->lang->transport == CODE_TRANSPORT_SHELL && p->shell_status != 0) {
                /* bash_kernel reports a failing command line as an error named "". */
                int n = snprintf(line, sizeof(line),
                                 "{\"type\":\"error\",\"name\":\"\",\"value\":\"%d\","
                                 "\"traceback\":\"\"}",
                                 p->shell_status);
                emit(p, line, (size_t)n);
        }
        emit(p, "{\"type\":\"end_of_execution\"}", 27);
        flush_out(p);
        if (!p->client_gone && agent_respond_end(p->r) < 0)
                p->client_gone = true;
}

int code_exec_run(struct agent_request *r, struct code_kernel *k, const struct code_exec *x)
{
        struct pump p = {.r = r, .k = k, .so = {.type = "stdout"}, .se = {.type = "stderr"}};
        struct buf req = {0};
        char line[96];
        int n, e;

        p.last_write_ms = now_ms();
        /* Output a previous execution left behind (background threads/jobs) is not ours. */
        drain_output(&p);
        buf_done(&p.so.pend);
        buf_done(&p.se.pend);
        p.out.len = 0;
        n = snprintf(line, sizeof(line),
                     "{\"type\":\"number_of_executions\",\"execution_count\":%u}",
                     x->execution_count);
        emit(&p, line, (size_t)n);
        if (x->notice) {
                stream_feed(&p, &p.se, x->notice, strlen(x->notice));
                stream_tick(&p, &p.se, true);
        }
        e = kernel_request(k, x, &req);
        if (e >= 0)
                e = code_kernel_send(k, req.p, req.len);
        buf_done(&req);
        if (e < 0)
                p.dead = true;
        while (!p.done && !p.dead)
                pump_once(&p);
        finish(&p);
        buf_done(&p.out);
        buf_done(&p.so.pend);
        buf_done(&p.se.pend);
        return p.dead ? -ECHILD : 0;
}
