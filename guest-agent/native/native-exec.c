/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /v1/exec and POST /v1/run-code: one process of the table run to its end on this
 * connection's thread, its output collected: at most NATIVE_OUTPUT_MAX bytes of stdout and
 * stderr together (less when sbxd asks with max_output_bytes), past which the process group is
 * killed and the answer is 422 output_too_large. If sbxd hangs up, the process is killed.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "buf.h"
#include "core/config.h"
#include "json-util.h"
#include "macros.h"
#include "native/native.h"
#include "proc/process.h"
#include "time-util.h"

#define BACKSTOP_MS 5000 /* past the process's own deadline, for a process that will not die */

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
        struct agent_request *r;
        pid_t pid;
        struct buf out[2]; /* stdout (and a pty's output), stderr */
        size_t max;
        bool too_large, timed_out;
        int exit_code;
        int64_t backstop;
        int64_t duration_ms;
};

static void collect_done(struct collect *c)
{
        buf_done(&c->out[0]);
        buf_done(&c->out[1]);
}

static void collect_kill(struct collect *c)
{
        (void)agent_proc_signal(&(struct agent_selector){.pid = (uint32_t)c->pid}, SIGKILL);
}

static int collect_started(void *userdata, pid_t pid)
{
        struct collect *c = userdata;
        c->pid = pid;
        return 0;
}

static int collect_output(void *userdata, enum agent_output_stream stream, const uint8_t *buf,
                          size_t len)
{
        struct collect *c = userdata;

        if (c->too_large)
                return 0;
        if (c->out[0].len + c->out[1].len + len > c->max) {
                c->too_large = true;
                collect_kill(c);
                return 0;
        }
        if (buf_add(&c->out[stream == AGENT_OUT_STDERR], buf, len) < 0) {
                collect_kill(c);
                return -ENOMEM;
        }
        return 0;
}

static int collect_exited(void *userdata, const struct agent_exit *ex, bool deadline_killed)
{
        struct collect *c = userdata;

        c->exit_code = ex->exit_code;
        if (deadline_killed)
                c->timed_out = true;
        return 0;
}

static int collect_prepare(void *userdata, struct pollfd fds[AGENT_PROC_LISTENER_FDS],
                           int *timeout_ms)
{
        struct collect *c = userdata;

        fds[0] = (struct pollfd){.fd = c->r->fd, .events = POLLRDHUP};
        *timeout_ms = (int)MAX(c->backstop - now_ms(), (int64_t)0);
        return 0;
}

/* The process is killed before detaching: the pump keeps its stdin open until it is gone, so a
 * reader never sees EOF after part of its input. */
static int collect_dispatch(void *userdata, const struct pollfd fds[AGENT_PROC_LISTENER_FDS])
{
        struct collect *c = userdata;

        if (now_ms() >= c->backstop) {
                collect_kill(c);
                return -ETIMEDOUT;
        }
        /* The request was read to its END: the socket turning readable means sbxd left. */
        if (fds[0].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)) {
                collect_kill(c);
                return -ECONNRESET;
        }
        return 0;
}

/* Run spec to its end, collecting at most max bytes into c. Answers the error itself (returning
 * its status, or -errno) unless it returns 0. */
static int run_collect(struct agent_request *r, const char *user,
                       const struct agent_proc_spec *spec, size_t max, struct collect *c)
{
        struct agent_proc *p;
        int64_t t0 = now_ms();
        int e;

        *c = (struct collect){.r = r, .max = max, .backstop = t0 + spec->timeout_ms + BACKSTOP_MS};
        /* List shows its argv only */
        e = native_spawn(r, user, spec, NULL, NULL, "", NULL, &p);
        if (e != 0)
                return e;

        const struct agent_proc_listener l = {
            .userdata = c,
            .started = collect_started,
            .output = collect_output,
            .exited = collect_exited,
            .prepare = collect_prepare,
            .dispatch = collect_dispatch,
        };
        e = agent_proc_run(p, &l);
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
                    native_utf8_dup((const uint8_t *)buf_str(&c->out[i]), c->out[i].len);
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

int native_handle_exec(struct agent_request *r)
{
        _cleanup_json_ cJSON *body = NULL, *out = cJSON_CreateObject();
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_(collect_done) struct collect c = {0};
        const char *msg = "invalid cmd", *user;
        cJSON *res;
        int e;

        if ((e = native_read_json(r, &body)) != 0)
                return e;
        e = native_argv(cJSON_GetObjectItemCaseSensitive(body, "cmd"), &argv, &msg);
        if (e < 0)
                return native_error(r, 400, "bad_request", "%s", msg);
        struct agent_proc_spec spec = {.argv = (const char *const *)argv};
        if (parse_timeout(body, &spec.timeout_ms) < 0)
                return native_error(r, 400, "bad_request",
                                    "timeout_ms must be an integer from 1 to %d (default %d)",
                                    NATIVE_TIMEOUT_MAX, NATIVE_TIMEOUT_DEFAULT);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(body, "user");
        if (native_user_name(cJSON_IsString(u) ? u->valuestring : NULL, &user) < 0)
                return native_error(r, 400, "bad_request", "user must be \"user\" or \"root\"");
        e = run_collect(r, user, &spec, output_bound(body), &c);
        if (e != 0)
                return e;
        if (!out || !(res = cJSON_AddObjectToObject(out, "result")) ||
            !cJSON_AddBoolToObject(res, "ok", !c.timed_out && c.exit_code == 0) ||
            add_output(res, &c) < 0 ||
            !cJSON_AddNumberToObject(res, "exit_code", c.timed_out ? -1 : c.exit_code) ||
            !cJSON_AddNumberToObject(res, "duration_ms", (double)c.duration_ms) ||
            !cJSON_AddBoolToObject(res, "timed_out", c.timed_out))
                return native_error(r, 500, "internal", "out of memory");
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
 *   shares the global lexical scope with the code. Node before 20.12 (Debian 12's 18) has no
 *   default-loader constant: there import() goes through a callback that imports from the
 *   bootstrap's context, which --experimental-vm-modules allows (it changes nothing else here).
 * - bash: `. /dev/stdin` reads the whole file before running it (errors say /dev/stdin: line N).
 *   It opens the pipe anew, which the pump's chmod of it allows (proc/process.h); the one byte the
 * agent writes first (after the chmod), waited for by `read -n 1`, makes sure bash opens it only
 * then.
 * - sh: dash sources a file piecewise, so the code is read with cat first and eval'd (errors say
 *   sh: N: eval: ...); a failed read exits without running a part of it. */
#define NODE_BOOT                                                                                  \
        "(() => { const vm = require('vm'), emit = process.emitWarning; "                          \
        "process.emitWarning = function (w, ...a) { "                                              \
        "if (!String(w).startsWith('vm.USE_MAIN_CONTEXT_DEFAULT_LOADER')) "                        \
        "return emit.call(this, w, ...a) }; "                                                      \
        "return new vm.Script(require('fs').readFileSync(0, 'utf8'), { filename: '[stdin]', "      \
        "importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER ?? "               \
        "((s) => import(s)) }) })().runInThisContext()"
#define SH_BOOT "__sbx_code=$(cat 2>/dev/null) || exit; eval \"unset __sbx_code; $__sbx_code\""

/* The interpreter for lang, the arguments that make it read the code from stdin, and what
 * the agent writes there before the code (NULL: nothing). */
static const struct lang {
        const char *name;
        const char *argv[4]; /* NULL-terminated when shorter */
        const char *pre;
} langs[] = {
    {"python", {"python3", "-"}, NULL},
    {"node", {"node", "--experimental-vm-modules", "-e", NODE_BOOT}, NULL},
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

int native_handle_run_code(struct agent_request *r)
{
        _cleanup_json_ cJSON *body = NULL, *out = cJSON_CreateObject();
        _cleanup_(collect_done) struct collect c = {0};
        const char *lang = "python", *user;
        const struct lang *lp;
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
                              lp->argv[3],
                              NULL};
        /* The code goes in on stdin: what comes before it (lp->pre), then the code. */
        const struct iovec input[] = {
            {.iov_base = (void *)(lp->pre ? lp->pre : ""),
             .iov_len = lp->pre ? strlen(lp->pre) : 0},
            {.iov_base = code->valuestring, .iov_len = code_len},
        };
        struct agent_proc_spec spec = {.argv = argv,
                                       .stdin_pipe = true,
                                       .stdin_data = input,
                                       .n_stdin_data = ELEMENTSOF(input)};
        if (parse_timeout(body, &spec.timeout_ms) < 0)
                return native_error(r, 400, "bad_request",
                                    "timeout_ms must be an integer from 1 to %d (default %d)",
                                    NATIVE_TIMEOUT_MAX, NATIVE_TIMEOUT_DEFAULT);
        e = run_collect(r, user, &spec, output_bound(body), &c);
        if (e != 0)
                return e;
        if (!out || add_output(out, &c) < 0 ||
            !cJSON_AddNumberToObject(out, "exit_code", c.timed_out ? -1 : c.exit_code) ||
            !cJSON_AddNumberToObject(out, "duration_ms", (double)c.duration_ms) ||
            !cJSON_AddStringToObject(out, "lang", lang) ||
            !cJSON_AddBoolToObject(out, "timed_out", c.timed_out))
                return native_error(r, 500, "internal", "out of memory");
        return native_json(r, 200, out);
}
