/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/connect-json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <nettle/base64.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "connect.h"
#include "macros.h"
#include "json-util.h"

/* Signal names from Go's syscall signal table for linux/amd64. */
static const char *const go_signal_names[] = {
    [SIGHUP] = "hangup",
    [SIGINT] = "interrupt",
    [SIGQUIT] = "quit",
    [SIGILL] = "illegal instruction",
    [SIGTRAP] = "trace/breakpoint trap",
    [SIGABRT] = "aborted",
    [SIGBUS] = "bus error",
    [SIGFPE] = "floating point exception",
    [SIGKILL] = "killed",
    [SIGUSR1] = "user defined signal 1",
    [SIGSEGV] = "segmentation fault",
    [SIGUSR2] = "user defined signal 2",
    [SIGPIPE] = "broken pipe",
    [SIGALRM] = "alarm clock",
    [SIGTERM] = "terminated",
    [SIGSTKFLT] = "stack fault",
    [SIGCHLD] = "child exited",
    [SIGCONT] = "continued",
    [SIGSTOP] = "stopped (signal)",
    [SIGTSTP] = "stopped",
    [SIGTTIN] = "stopped (tty input)",
    [SIGTTOU] = "stopped (tty output)",
    [SIGURG] = "urgent I/O condition",
    [SIGXCPU] = "CPU time limit exceeded",
    [SIGXFSZ] = "file size limit exceeded",
    [SIGVTALRM] = "virtual timer expired",
    [SIGPROF] = "profiling timer expired",
    [SIGWINCH] = "window changed",
    [SIGIO] = "I/O possible",
    [SIGPWR] = "power failure",
    [SIGSYS] = "bad system call",
};

const char *agent_signal_name(int sig, char buf[static 16])
{
        if (sig > 0 && (size_t)sig < ELEMENTSOF(go_signal_names) && go_signal_names[sig])
                return go_signal_names[sig];
        snprintf(buf, 16, "signal %d", sig);
        return buf;
}

void agent_exit_from_siginfo(int code, int status, struct agent_exit *ret)
{
        char nbuf[16];

        memset(ret, 0, sizeof(*ret));
        if (code == CLD_EXITED) {
                ret->exit_code = status;
                ret->exited = true;
                ret->has_error = status != 0;
                snprintf(ret->status, sizeof(ret->status), "exit status %d", status);
                return;
        }
        ret->exit_code = -1;
        ret->exited = false;
        ret->has_error = true;
        snprintf(ret->status, sizeof(ret->status), "signal: %s%s", agent_signal_name(status, nbuf),
                 code == CLD_DUMPED ? " (core dumped)" : "");
}

static int dup_out(const char *s, char **ret, size_t *ret_len)
{
        char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        *ret = d;
        *ret_len = strlen(d);
        return 0;
}

static int print_out(cJSON *j, char **ret, size_t *ret_len)
{
        char *s = cJSON_PrintUnformatted(j);
        if (!s)
                return -ENOMEM;
        *ret = s;
        *ret_len = strlen(s);
        return 0;
}

int cj_event_start(uint32_t pid, char **ret, size_t *ret_len)
{
        char buf[64];
        snprintf(buf, sizeof(buf), "{\"event\":{\"start\":{\"pid\":%u}}}", pid);
        return dup_out(buf, ret, ret_len);
}

int cj_event_data(enum agent_output_stream stream, const uint8_t *buf, size_t len, char **ret,
                  size_t *ret_len)
{
        static const char *const names[] = {"stdout", "stderr", "pty"};
        const char *name = names[stream];
        size_t b64 = BASE64_ENCODE_RAW_LENGTH(len);
        size_t total = strlen("{\"event\":{\"data\":{\"\":\"\"}}}") + strlen(name) + b64;
        char *s = malloc(total + 1);
        int o;

        if (!s)
                return -ENOMEM;
        o = sprintf(s, "{\"event\":{\"data\":{\"%s\":\"", name);
        base64_encode_raw(s + o, len, buf);
        memcpy(s + o + b64, "\"}}}", 5);
        *ret = s;
        *ret_len = total;
        return 0;
}

int cj_event_keepalive(char **ret, size_t *ret_len)
{
        return dup_out("{\"event\":{\"keepalive\":{}}}", ret, ret_len);
}

int cj_event_end(const struct agent_exit *e, char **ret, size_t *ret_len)
{
        _cleanup_json_ cJSON *root = cJSON_CreateObject();
        cJSON *ev, *end;

        if (!root || !(ev = cJSON_AddObjectToObject(root, "event")) ||
            !(end = cJSON_AddObjectToObject(ev, "end")))
                return -ENOMEM;
        /* proto3 JSON omits defaults: exitCode 0, exited false, empty status. */
        if (e->exit_code != 0 && !cJSON_AddNumberToObject(end, "exitCode", e->exit_code))
                return -ENOMEM;
        if (e->exited && !cJSON_AddTrueToObject(end, "exited"))
                return -ENOMEM;
        if (e->status[0] && !cJSON_AddStringToObject(end, "status", e->status))
                return -ENOMEM;
        if (e->has_error && !cJSON_AddStringToObject(end, "error", e->status))
                return -ENOMEM;
        return print_out(root, ret, ret_len);
}

int cj_end_stream_ok(char **ret, size_t *ret_len)
{
        return dup_out("{}", ret, ret_len);
}

int cj_end_stream_error(const char *code, const char *message, char **ret, size_t *ret_len)
{
        _cleanup_json_ cJSON *root = cJSON_CreateObject();
        cJSON *err;

        if (!root || !(err = cJSON_AddObjectToObject(root, "error")) ||
            !cJSON_AddStringToObject(err, "code", code) ||
            (message && !cJSON_AddStringToObject(err, "message", message)))
                return -ENOMEM;
        return print_out(root, ret, ret_len);
}

int cj_error_body(const char *code, const char *message, char **ret, size_t *ret_len)
{
        _cleanup_json_ cJSON *root = cJSON_CreateObject();

        if (!root || !cJSON_AddStringToObject(root, "code", code) ||
            (message && !cJSON_AddStringToObject(root, "message", message)))
                return -ENOMEM;
        return print_out(root, ret, ret_len);
}

int cj_rest_error_body(int status, const char *message, char **ret, size_t *ret_len)
{
        _cleanup_json_ cJSON *root = cJSON_CreateObject();

        if (!root || !cJSON_AddNumberToObject(root, "code", status) ||
            !cJSON_AddStringToObject(root, "message", message ? message : ""))
                return -ENOMEM;
        return print_out(root, ret, ret_len);
}

int cj_envelope(uint8_t flags, const char *msg, size_t msg_len, uint8_t **ret, size_t *ret_len)
{
        uint8_t *b;

        if (msg_len > UINT32_MAX)
                return -EMSGSIZE;
        b = malloc(CONNECT_ENVELOPE_HEADER_SIZE + msg_len);
        if (!b)
                return -ENOMEM;
        connect_envelope_header(b, flags, (uint32_t)msg_len);
        memcpy(b + CONNECT_ENVELOPE_HEADER_SIZE, msg, msg_len);
        *ret = b;
        *ret_len = CONNECT_ENVELOPE_HEADER_SIZE + msg_len;
        return 0;
}

int cj_bytes_decode(const char *s, uint8_t **ret, size_t *ret_len)
{
        struct base64_decode_ctx ctx;
        size_t n = strlen(s), outlen;
        bool url = strpbrk(s, "-_") != NULL;

        /* nettle wants complete quanta: re-pad unpadded input. */
        _cleanup_free_ char *padded = malloc(n + 4);
        _cleanup_free_ uint8_t *out = malloc(BASE64_DECODE_LENGTH(n + 3) + 1);
        if (!padded || !out)
                return -ENOMEM;
        memcpy(padded, s, n);
        if (n % 4 == 1)
                return -EINVAL;
        while (n % 4)
                padded[n++] = '=';
        if (url)
                base64url_decode_init(&ctx);
        else
                base64_decode_init(&ctx);
        outlen = BASE64_DECODE_LENGTH(n);
        if (!base64_decode_update(&ctx, &outlen, out, n, padded) || !base64_decode_final(&ctx))
                return -EINVAL;
        *ret = TAKE_PTR(out);
        *ret_len = outlen;
        return 0;
}
