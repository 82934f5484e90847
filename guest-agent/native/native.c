/* SPDX-License-Identifier: Apache-2.0 */
#include "native/native.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "envd/files.h"
#include "core/http.h"
#include "native/native-loop.h"
#include "proc/process.h"
#include "macros.h"
#include "json-util.h"
#include "time-util.h"

/* ---- helpers shared by the native handlers ---- */

int native_error(struct agent_request *r, int status, const char *code, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL, *body = NULL;
        va_list ap;
        cJSON *o, *e;

        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (!msg)
                return -ENOMEM;
        o = cJSON_CreateObject();
        if (!o || !(e = cJSON_AddObjectToObject(o, "error")) ||
            !cJSON_AddStringToObject(e, "code", code) ||
            !cJSON_AddStringToObject(e, "message", msg) || !(body = cJSON_PrintUnformatted(o))) {
                cJSON_Delete(o);
                return -ENOMEM;
        }
        cJSON_Delete(o);
        if (!r->body_done)
                (void)agent_request_discard_body(r, NATIVE_MAX_BODY);
        return agent_respond(r, status, "application/json", body, strlen(body));
}

int native_json(struct agent_request *r, int status, const cJSON *o)
{
        _cleanup_free_ char *body = cJSON_PrintUnformatted(o);
        if (!body)
                return native_error(r, 500, "internal", "out of memory");
        return agent_respond(r, status, "application/json", body, strlen(body));
}

int native_read_json(struct agent_request *r, cJSON **ret)
{
        _cleanup_free_ uint8_t *body = NULL;
        size_t len;
        int e = agent_request_read_body_all(r, NATIVE_MAX_BODY, &body, &len);
        if (e == -EMSGSIZE)
                return native_error(r, 413, "payload_too_large",
                                    "request body larger than %u bytes", NATIVE_MAX_BODY);
        if (e < 0)
                return e;
        cJSON *o = len ? cJSON_ParseWithLength((const char *)body, len) : cJSON_CreateObject();
        if (!cJSON_IsObject(o)) {
                cJSON_Delete(o);
                e = native_error(r, 400, "bad_request", "the body must be a JSON object");
                return e < 0 ? e : -EINVAL;
        }
        *ret = o;
        return 0;
}

char *native_query(const struct agent_request *r, const char *key)
{
        char *v = NULL;
        return http_query_get(r->head.query, key, &v) > 0 ? v : NULL;
}

int native_user_name(const char *v, const char **ret)
{
        if (!v || !*v)
                *ret = NULL;
        else if (strcmp(v, "user") == 0 || strcmp(v, "root") == 0)
                *ret = strcmp(v, "root") == 0 ? "root" : "user";
        else
                return -EINVAL;
        return 0;
}

int native_argv(const cJSON *cmd, char ***ret, const char **ret_msg)
{
        size_t n = 0, i = 0;
        const cJSON *e;
        char **l;

        if (cJSON_IsString(cmd) && *cmd->valuestring) {
                l = calloc(4, sizeof(char *));
                if (!l || !(l[0] = strdup("/bin/sh")) || !(l[1] = strdup("-c")) ||
                    !(l[2] = strdup(cmd->valuestring)))
                        goto oom;
                *ret = l;
                return 0;
        }
        *ret_msg = "cmd must be a non-empty array of strings or a non-empty string";
        if (!cJSON_IsArray(cmd) || (n = (size_t)cJSON_GetArraySize(cmd)) == 0 || n > 4096)
                return -EINVAL;
        cJSON_ArrayForEach(e, cmd)
        {
                if (!cJSON_IsString(e) || (i++ == 0 && !*e->valuestring))
                        return -EINVAL;
        }
        l = calloc(n + 1, sizeof(char *));
        i = 0;
        if (!l)
                return -ENOMEM;
        cJSON_ArrayForEach(e, cmd)
        {
                if (!(l[i++] = strdup(e->valuestring)))
                        goto oom;
        }
        *ret = l;
        return 0;
oom:
        for (size_t k = 0; l && l[k]; k++)
                free(l[k]);
        free(l);
        return -ENOMEM;
}

static void argv_free(char ***l)
{
        for (size_t i = 0; *l && (*l)[i]; i++)
                free((*l)[i]);
        free(*l);
}
#define _cleanup_argv_ __attribute__((cleanup(argv_free)))

/* timeout_ms: absent → default; an integer 1..NATIVE_TIMEOUT_MAX. */
static int parse_timeout(const cJSON *body, int64_t *ret)
{
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "timeout_ms");
        *ret = NATIVE_TIMEOUT_DEFAULT;
        if (!t || cJSON_IsNull(t))
                return 0;
        if (!cJSON_IsNumber(t) || t->valuedouble != (double)(int64_t)t->valuedouble ||
            t->valuedouble < 1 || t->valuedouble > NATIVE_TIMEOUT_MAX)
                return -EINVAL;
        *ret = (int64_t)t->valuedouble;
        return 0;
}

/* ---- collecting one process's output ---- */

struct collect {
        uint8_t *out[2];
        size_t len[2];
        size_t max;
        bool too_large, timed_out;
        int exit_code;
        int64_t duration_ms;
};

static void collect_done(struct collect *c)
{
        free(c->out[0]);
        free(c->out[1]);
}

static int collect_append(struct collect *c, int stream, const uint8_t *d, size_t n)
{
        if (c->too_large)
                return 0;
        if (c->len[0] + c->len[1] + n > c->max) {
                c->too_large = true;
                return 0;
        }
        uint8_t *nb = realloc(c->out[stream], c->len[stream] + n + 1);
        if (!nb)
                return -ENOMEM;
        memcpy(nb + c->len[stream], d, n);
        c->out[stream] = nb;
        c->len[stream] += n;
        return 0;
}

/* Bytes for the process's stdin (run-code's prefix and code): written as the pipe takes them,
 * then the pipe is closed (ours and the table's end) so the reader sees EOF. */
struct feed {
        const char *part[2];
        size_t len[2], off; /* off counts over both parts */
        int fd;             /* a non-blocking dup of the stdin pipe; -EBADF when none or done */
};

static void feed_done(struct feed *in)
{
        in->fd = safe_close(in->fd);
}

static int feed_write(struct feed *in, const struct agent_selector *sel)
{
        for (;;) {
                struct iovec iov[2];
                size_t skip = in->off;
                int n_iov = 0;
                for (int i = 0; i < 2; i++) {
                        if (skip >= in->len[i]) {
                                skip -= in->len[i];
                                continue;
                        }
                        iov[n_iov++] = (struct iovec){.iov_base = (char *)in->part[i] + skip,
                                                      .iov_len = in->len[i] - skip};
                        skip = 0;
                }
                if (n_iov == 0)
                        break;
                ssize_t n = writev(in->fd, iov, n_iov);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 0;
                if (n < 0 && errno == EPIPE)
                        break; /* the reader is gone (a missing interpreter): nothing to feed */
                if (n < 0)
                        return -errno;
                in->off += (size_t)n;
        }
        feed_done(in);
        (void)agent_process_close_stdin(sel);
        return 0;
}

/* Whether the request's client (sbxd) went away: the request was read to its END, so the
 * socket turning readable means EOF. */
static bool client_gone(const struct agent_request *r, short revents)
{
        return revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR);
}

/* On every early return the process group is killed before the caller closes in->fd: the
 * table still holds the pipe then, so a reader never sees EOF after part of its input. */
static int collect_loop(struct agent_request *r, struct native_stream *st, int pid,
                        int64_t deadline, struct feed *in, struct collect *c)
{
        struct agent_selector sel = {.pid = (uint32_t)pid};
        for (;;) {
                struct pollfd p[3] = {{.fd = native_stream_fd(st), .events = POLLIN},
                                      {.fd = r->fd, .events = POLLRDHUP},
                                      {.fd = in->fd, .events = POLLOUT}};
                int64_t left = deadline - now_ms();
                int e;
                if (left <= 0) {
                        (void)agent_process_signal(&sel, SIGKILL);
                        return -ETIMEDOUT;
                }
                if (poll(p, 3, (int)MIN(left, (int64_t)1000)) < 0 && errno != EINTR)
                        return -errno;
                if (client_gone(r, p[1].revents)) {
                        (void)agent_process_signal(&sel, SIGKILL);
                        return -ECONNRESET;
                }
                if (in->fd >= 0 && p[2].revents && (e = feed_write(in, &sel)) < 0) {
                        (void)agent_process_signal(&sel, SIGKILL);
                        return e;
                }
                if (!p[0].revents)
                        continue;
                struct native_event ev;
                e = native_stream_next(st, &ev);
                if (e < 0)
                        return e == -EPIPE ? 0 : e;
                if (ev.kind == NATIVE_EV_DATA) {
                        e = collect_append(c, ev.stream == 1 ? 1 : 0, ev.data, ev.len);
                        if (c->too_large)
                                (void)agent_process_signal(&sel, SIGKILL);
                } else if (ev.kind == NATIVE_EV_END)
                        c->exit_code = ev.exit_code;
                else if (ev.kind == NATIVE_EV_ERROR) {
                        if (streq_ptr(ev.code, "deadline_exceeded"))
                                c->timed_out = true;
                        else
                                e = -EIO;
                }
                native_event_done(&ev);
                if (e < 0)
                        return e;
        }
}

/* A non-blocking dup of pid's stdin pipe for in; a process that already exited needs none.
 * The pipe (created by the agent, so owned by the sandbox's root with mode 0600) is made
 * readable by its user too, before anything is written: bash reopens it as /dev/stdin, which
 * the inode's permissions decide (only the process itself, or one that may ptrace it, reaches
 * its /proc/self/fd, so this opens it to nobody else). */
static int feed_open(struct feed *in, int pid)
{
        bool pty;
        int fl, e = agent_process_input_fd(&(struct agent_selector){.pid = (uint32_t)pid}, &pty,
                                           &in->fd);
        if (e == -ESRCH) {
                in->fd = -EBADF;
                return 0;
        }
        if (e < 0)
                return e;
        if ((fl = fcntl(in->fd, F_GETFL)) < 0 || fcntl(in->fd, F_SETFL, fl | O_NONBLOCK) < 0 ||
            fchmod(in->fd, 0644) < 0)
                return -errno;
        return 0;
}

/* Run spec to completion, writing pre (a string, or NULL) and input[0..input_len) to its stdin
 * (spec->stdin_pipe) when input is not NULL. Answers the error itself (returning its send
 * result, or -EINVAL when nothing else is to be sent) unless it returns 0. */
static int run_collect(struct agent_request *r, const struct native_spec *spec, const char *pre,
                       const char *input, size_t input_len, size_t max, struct collect *c)
{
        _cleanup_native_stream_ struct native_stream *st = NULL;
        struct feed in = {
            .part = {pre, input}, .len = {pre ? strlen(pre) : 0, input_len}, .fd = -EBADF};
        char err[600];
        int pid, e;
        int64_t t0 = now_ms();

        *c = (struct collect){.max = max};
        e = native_stream_start(spec, &st, &pid, err, sizeof(err));
        if (e == -EACCES)
                return native_error(r, 400, "bad_request", "unknown user: %s", err);
        if (e == -EINVAL)
                return native_error(r, 400, "bad_request", "%s", err);
        if (e < 0)
                return native_error(r, 500, "internal", "starting the process: %s", strerror(-e));
        if (input && (e = feed_open(&in, pid)) < 0) {
                (void)agent_process_signal(&(struct agent_selector){.pid = (uint32_t)pid}, SIGKILL);
                feed_done(&in);
                return native_error(r, 500, "internal", "feeding the process: %s", strerror(-e));
        }
        e = collect_loop(r, st, pid, t0 + spec->timeout_ms + 5000, &in, c);
        feed_done(&in);
        c->duration_ms = now_ms() - t0;
        if (e == -ECONNRESET)
                return e;
        if (e == -ETIMEDOUT)
                c->timed_out = true;
        else if (e < 0)
                return native_error(r, 500, "internal", "running the process: %s", strerror(-e));
        if (c->too_large)
                return native_error(r, 422, "output_too_large",
                                    "combined stdout and stderr exceeded %zu bytes (the process "
                                    "was killed); redirect large output to a file in the "
                                    "sandbox (e.g. > /tmp/out.txt) and download it with the "
                                    "filesystem API",
                                    max);
        return 0;
}

static int add_output(cJSON *o, const struct collect *c)
{
        for (int i = 0; i < 2; i++) {
                _cleanup_free_ char *s =
                    native_utf8_dup(c->out[i] ? c->out[i] : (uint8_t *)"", c->len[i]);
                if (!s || !cJSON_AddStringToObject(o, i ? "stderr" : "stdout", s))
                        return -ENOMEM;
        }
        return 0;
}

/* Output bound asked by the caller (MCP asks for less), at most NATIVE_OUTPUT_MAX. */
static size_t output_bound(const cJSON *body)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(body, "max_output_bytes");
        if (cJSON_IsNumber(m) && m->valuedouble >= 1 && m->valuedouble < NATIVE_OUTPUT_MAX)
                return (size_t)m->valuedouble;
        return NATIVE_OUTPUT_MAX;
}

static int handle_exec(struct agent_request *r)
{
        _cleanup_json_ cJSON *body = NULL, *out = cJSON_CreateObject();
        _cleanup_argv_ char **argv = NULL;
        const char *msg = "invalid cmd", *user;
        struct collect c;
        cJSON *res;
        int e;

        if ((e = native_read_json(r, &body)) != 0)
                return e;
        e = native_argv(cJSON_GetObjectItemCaseSensitive(body, "cmd"), &argv, &msg);
        if (e < 0)
                return native_error(r, 400, "bad_request", "%s", msg);
        struct native_spec spec = {.argv = (const char *const *)argv};
        if (parse_timeout(body, &spec.timeout_ms) < 0)
                return native_error(r, 400, "bad_request",
                                    "timeout_ms must be an integer from 1 to %d (default %d)",
                                    NATIVE_TIMEOUT_MAX, NATIVE_TIMEOUT_DEFAULT);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(body, "user");
        if (native_user_name(cJSON_IsString(u) ? u->valuestring : NULL, &user) < 0)
                return native_error(r, 400, "bad_request", "user must be \"user\" or \"root\"");
        spec.user = user;
        e = run_collect(r, &spec, NULL, NULL, 0, output_bound(body), &c);
        if (e != 0) {
                collect_done(&c);
                return e;
        }
        if (!out || !(res = cJSON_AddObjectToObject(out, "result")) ||
            !cJSON_AddBoolToObject(res, "ok", !c.timed_out && c.exit_code == 0) ||
            add_output(res, &c) < 0 ||
            !cJSON_AddNumberToObject(res, "exit_code", c.timed_out ? -1 : c.exit_code) ||
            !cJSON_AddNumberToObject(res, "duration_ms", (double)c.duration_ms) ||
            !cJSON_AddBoolToObject(res, "timed_out", c.timed_out)) {
                collect_done(&c);
                return native_error(r, 500, "internal", "out of memory");
        }
        collect_done(&c);
        return native_json(r, 200, out);
}

/* run-code hands the code to the interpreter on stdin rather than as one argv string (Linux
 * caps one at MAX_ARG_STRLEN, 128 KiB): the agent writes it into the stdin pipe and closes it.
 * Every interpreter reads stdin to EOF before any of the code runs, so the code then finds its
 * stdin empty (at EOF, as /dev/null was when the code was an argument) and no other fd is
 * open; a bash or sh command reading stdin cannot eat the rest of the script.
 * - python: `python3 -` (tracebacks say File "<stdin>", line N; sys.argv is ['-']).
 * - node: `node -` would read it through process.stdin, which then never ends for the code
 *   (readline never closes), so a `-e` bootstrap reads fd 0 itself and runs the code as -e
 *   would (a script in the main context, `[stdin]:N` in stack traces, dynamic import() through
 *   the default loader, its once-only ExperimentalWarning dropped). No top-level bindings: it
 *   shares the global lexical scope with the code.
 * - bash: `. /dev/stdin` reads the whole file before running it (errors say /dev/stdin: line N).
 *   It opens the pipe anew, which feed_open()'s chmod allows; the one byte the agent writes
 *   first (after the chmod), waited for by `read -n 1`, makes sure bash opens it only then.
 * - sh: dash sources a file piecewise, so the code is read with cat first and eval'd (errors say
 *   sh: N: eval: ...); a failed read exits without running a part of it. */
#define NODE_BOOT                                                                                  \
        "(() => { const vm = require('vm'), emit = process.emitWarning; "                          \
        "process.emitWarning = function (w, ...a) { "                                              \
        "if (!String(w).startsWith('vm.USE_MAIN_CONTEXT_DEFAULT_LOADER')) "                        \
        "return emit.call(this, w, ...a) }; "                                                      \
        "return new vm.Script(require('fs').readFileSync(0, 'utf8'), { filename: '[stdin]', "      \
        "importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER }) })()"           \
        ".runInThisContext()"
#define SH_BOOT "__sbx_code=$(cat 2>/dev/null) || exit; eval \"unset __sbx_code; $__sbx_code\""

/* The interpreter for lang, the arguments that make it read the code from stdin, and what
 * the agent writes there before the code (NULL: nothing). */
static const struct lang {
        const char *name;
        const char *argv[3];
        const char *pre;
} langs[] = {
    {"python", {"python3", "-"}, NULL},
    {"node", {"node", "-e", NODE_BOOT}, NULL},
    {"bash", {"bash", "-c", "IFS= read -r -d '' -n 1 _ && . /dev/stdin"}, "\n"},
    {"sh", {"sh", "-c", SH_BOOT}, NULL},
};

static const struct lang *lang_find(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(langs); i++)
                if (strcmp(name, langs[i].name) == 0)
                        return &langs[i];
        return NULL;
}

static int handle_run_code(struct agent_request *r)
{
        _cleanup_json_ cJSON *body = NULL, *out = cJSON_CreateObject();
        const char *lang = "python", *user;
        const struct lang *lp;
        struct collect c;
        size_t code_len;
        int e;

        if ((e = native_read_json(r, &body)) != 0)
                return e;
        const cJSON *code = cJSON_GetObjectItemCaseSensitive(body, "code");
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(body, "lang");
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(body, "user");
        if (!cJSON_IsString(code))
                return native_error(r, 400, "bad_request", "code must be a string");
        code_len = strlen(code->valuestring);
        if (code_len > NATIVE_CODE_MAX)
                return native_error(r, 413, "payload_too_large",
                                    "code is longer than %u bytes: write it to a file with the "
                                    "filesystem API and run it with exec",
                                    NATIVE_CODE_MAX);
        if (cJSON_IsString(l))
                lang = l->valuestring;
        else if (l && !cJSON_IsNull(l))
                return native_error(r, 400, "bad_request", "lang must be a string");
        if (!(lp = lang_find(lang)))
                return native_error(r, 400, "bad_request",
                                    "lang must be python, node, bash or sh (got \"%.64s\")", lang);
        if (native_user_name(cJSON_IsString(u) ? u->valuestring : NULL, &user) < 0)
                return native_error(r, 400, "bad_request", "user must be \"user\" or \"root\"");
        /* A missing interpreter exits 127 with no output at all (not the shell's complaint),
         * without reading its stdin. */
        const char *argv[] = {"/bin/sh",
                              "-c",
                              "command -v \"$0\" >/dev/null 2>&1 || exit 127; exec \"$0\" \"$@\"",
                              lp->argv[0],
                              lp->argv[1],
                              lp->argv[2],
                              NULL};
        struct native_spec spec = {.argv = argv, .user = user, .stdin_pipe = true};
        if (parse_timeout(body, &spec.timeout_ms) < 0)
                return native_error(r, 400, "bad_request",
                                    "timeout_ms must be an integer from 1 to %d (default %d)",
                                    NATIVE_TIMEOUT_MAX, NATIVE_TIMEOUT_DEFAULT);
        e = run_collect(r, &spec, lp->pre, code->valuestring, code_len, output_bound(body), &c);
        if (e != 0) {
                collect_done(&c);
                return e;
        }
        if (!out || add_output(out, &c) < 0 ||
            !cJSON_AddNumberToObject(out, "exit_code", c.timed_out ? -1 : c.exit_code) ||
            !cJSON_AddNumberToObject(out, "duration_ms", (double)c.duration_ms) ||
            !cJSON_AddStringToObject(out, "lang", lang) ||
            !cJSON_AddBoolToObject(out, "timed_out", c.timed_out)) {
                collect_done(&c);
                return native_error(r, 500, "internal", "out of memory");
        }
        collect_done(&c);
        return native_json(r, 200, out);
}

int agent_native_route(struct agent_request *r)
{
        const char *m = r->head.method, *p = r->head.path;
        int e;

        if (r->head.port != 0 || strncmp(p, "/v1/", 4) != 0)
                return -ENOENT;
        if (streq_ptr(m, "POST") && streq_ptr(p, "/v1/exec"))
                return handle_exec(r);
        if (streq_ptr(m, "POST") && streq_ptr(p, "/v1/run-code"))
                return handle_run_code(r);
        if (streq_ptr(p, "/v1/files")) {
                if (streq_ptr(m, "GET"))
                        return agent_files_handle_get(r);
                if (streq_ptr(m, "PUT") || streq_ptr(m, "POST"))
                        return agent_files_handle_post(r);
        }
        if (streq_ptr(m, "GET") && streq_ptr(p, "/v1/terminal"))
                return native_term_handle(r);
        if ((e = native_fs_route(r, m, p)) != -ENOENT)
                return e;
        if ((e = native_proc_route(r, m, p)) != -ENOENT)
                return e;
        return native_error(r, 404, "not_found", "no such route: %s %s", m, p);
}
