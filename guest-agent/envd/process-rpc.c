/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unary process.Process RPCs over the process table: List, SendSignal, SendInput, CloseStdin,
 * Update
 * (Connect unary, JSON codec; docs/e2b-wire.md §3.3, §3.5). Errors as envd words
 * them: an unknown pid or tag is not_found.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "envd/connect-json.h"
#include "proc/outlog.h"
#include "proc/process-env.h"
#include "proc/process.h"
#include "connect.h"
#include "fd-util.h"
#include "macros.h"
#include "json-util.h"
#include "time-util.h"

#define INPUT_WAIT_MS 60000

static int respond_ok(struct agent_request *r, const char *json)
{
        return agent_respond(r, 200, "application/json", json, strlen(json));
}

/* {"process":{"pid":N}} or {"process":{"tag":"x"}}: 0, or the error answer's result. */
static int parse_selector(struct agent_request *r, const cJSON *root, struct agent_selector *sel,
                          int *ret_answered)
{
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "process");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(p, "pid");
        const cJSON *tag = cJSON_GetObjectItemCaseSensitive(p, "tag");

        *sel = (struct agent_selector){0};
        if (cJSON_IsString(tag)) {
                sel->tag = tag->valuestring;
                return 0;
        }
        /* uint32 may come as a number or, from some encoders, a string. */
        if (cJSON_IsNumber(pid) && pid->valuedouble >= 1 && pid->valuedouble <= UINT32_MAX) {
                sel->pid = (uint32_t)pid->valuedouble;
                return 0;
        }
        if (cJSON_IsString(pid)) {
                char *end;
                unsigned long v = strtoul(pid->valuestring, &end, 10);
                if (!*end && end != pid->valuestring && v >= 1 && v <= UINT32_MAX) {
                        sel->pid = (uint32_t)v;
                        return 0;
                }
        }
        *ret_answered = agent_respond_connect_error(r, "invalid_argument",
                                                    "process selector (pid or tag) is required");
        return -EINVAL;
}

static int not_found(struct agent_request *r, const struct agent_selector *sel)
{
        if (sel->tag)
                return agent_respond_connect_error(r, "not_found", "process with tag %s not found",
                                                   sel->tag);
        return agent_respond_connect_error(r, "not_found", "process with pid %u not found",
                                           sel->pid);
}

static int parse_signal(const cJSON *j)
{
        if (cJSON_IsString(j)) {
                if (strcmp(j->valuestring, "SIGNAL_SIGKILL") == 0)
                        return SIGKILL;
                if (strcmp(j->valuestring, "SIGNAL_SIGTERM") == 0)
                        return SIGTERM;
        } else if (cJSON_IsNumber(j) && (j->valueint == SIGKILL || j->valueint == SIGTERM))
                return j->valueint;
        return -EINVAL;
}

static int send_signal(struct agent_request *r, const cJSON *root)
{
        struct agent_selector sel;
        int answered = 0, sig;

        if (parse_selector(r, root, &sel, &answered) < 0)
                return answered;
        sig = parse_signal(cJSON_GetObjectItemCaseSensitive(root, "signal"));
        if (sig < 0)
                return agent_respond_connect_error(r, "unimplemented", "invalid signal");
        if (agent_process_signal(&sel, sig) < 0)
                return not_found(r, &sel);
        return respond_ok(r, "{}");
}

/* Write all of buf to a pipe or pty master without blocking the thread for good. */
static int write_input(struct agent_request *r, int fd, const uint8_t *buf, size_t len)
{
        int64_t deadline;
        int fl = fcntl(fd, F_GETFL);

        /* The description is shared with the table's fd (and, for a pty, the pump's master,
         * which is non-blocking already); every writer goes through here. */
        if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return negative_errno();
        deadline = now_ms() + INPUT_WAIT_MS;
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n > 0) {
                        buf += n;
                        len -= (size_t)n;
                        continue;
                }
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return negative_errno();
                struct pollfd p[2] = {{.fd = fd, .events = POLLOUT},
                                      {.fd = r->fd, .events = POLLRDHUP}};
                int64_t left = deadline - now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(p, 2, (int)MIN(left, 1000)) < 0 && errno != EINTR)
                        return negative_errno();
                if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
                        return -ECONNRESET;
        }
        return 0;
}

static int send_input(struct agent_request *r, const cJSON *root)
{
        const cJSON *input = cJSON_GetObjectItemCaseSensitive(root, "input");
        const cJSON *in_stdin = cJSON_GetObjectItemCaseSensitive(input, "stdin");
        const cJSON *in_pty = cJSON_GetObjectItemCaseSensitive(input, "pty");
        _cleanup_free_ uint8_t *data = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct agent_selector sel;
        bool is_pty = false, want_pty;
        size_t len;
        int answered = 0, e;

        if (parse_selector(r, root, &sel, &answered) < 0)
                return answered;
        if (!cJSON_IsString(in_stdin) && !cJSON_IsString(in_pty))
                return agent_respond_connect_error(r, "unimplemented", "invalid input type");
        want_pty = cJSON_IsString(in_pty);
        if (cj_bytes_decode(want_pty ? in_pty->valuestring : in_stdin->valuestring, &data, &len) <
            0)
                return agent_respond_connect_error(r, "invalid_argument", "invalid base64 input");
        e = agent_process_input_fd(&sel, &is_pty, &fd);
        if (e == -ESRCH)
                return not_found(r, &sel);
        if (e == -EBADF)
                return agent_respond_connect_error(r, "internal",
                                                   "error writing to stdin: stdin not enabled or "
                                                   "closed");
        if (e < 0)
                return agent_respond_connect_error(r, "internal", "error writing input: %s",
                                                   strerror(-e));
        if (is_pty != want_pty)
                return agent_respond_connect_error(
                    r, "internal",
                    is_pty ? "error writing to stdin: tty assigned to process, input should "
                             "be written to the pty"
                           : "error writing to tty: tty not assigned to process");
        /* As envd, the call waits while the process does not read its input (the pipe or the
         * terminal is full) — but never forever: it gives up when sbxd hangs up (the client
         * left) or after INPUT_WAIT_MS. */
        e = write_input(r, fd, data, len);
        if (e == -ETIMEDOUT)
                return agent_respond_connect_error(r, "deadline_exceeded",
                                                   "the process did not read its input");
        if (e < 0)
                return agent_respond_connect_error(r, "internal", "error writing to %s: %s",
                                                   is_pty ? "tty" : "stdin", strerror(-e));
        return respond_ok(r, "{}");
}

static int close_stdin(struct agent_request *r, const cJSON *root)
{
        struct agent_selector sel;
        int answered = 0, e;

        if (parse_selector(r, root, &sel, &answered) < 0)
                return answered;
        e = agent_process_close_stdin(&sel);
        if (e == -ESRCH)
                return not_found(r, &sel);
        if (e == -ENOTTY)
                return agent_respond_connect_error(r, "unknown",
                                                   "error closing stdin: cannot close stdin for "
                                                   "PTY process, send Ctrl+D (0x04) instead");
        return respond_ok(r, "{}");
}

static unsigned short winsize_field(const cJSON *size, const char *name)
{
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(size, name);
        /* uint32 on the wire, truncated to the kernel's 16 bits as envd does. */
        if (!cJSON_IsNumber(j) || j->valuedouble < 0 || j->valuedouble > UINT32_MAX)
                return 0;
        return (unsigned short)(uint32_t)j->valuedouble;
}

static int update(struct agent_request *r, const cJSON *root)
{
        const cJSON *pty = cJSON_GetObjectItemCaseSensitive(root, "pty");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(pty, "size");
        _cleanup_close_ int fd = -EBADF;
        struct agent_selector sel;
        bool is_pty = false;
        int answered = 0, e;

        if (parse_selector(r, root, &sel, &answered) < 0)
                return answered;
        e = agent_process_input_fd(&sel, &is_pty, &fd);
        if (e == -ESRCH)
                return not_found(r, &sel);
        if (!cJSON_IsObject(pty))
                return respond_ok(r, "{}");
        if (e < 0 || !is_pty)
                return agent_respond_connect_error(
                    r, "internal", "error resizing tty: tty not assigned to process");
        struct winsize ws = {.ws_row = winsize_field(size, "rows"),
                             .ws_col = winsize_field(size, "cols")};
        if (ioctl(fd, TIOCSWINSZ, &ws) < 0)
                return agent_respond_connect_error(r, "internal", "error resizing tty: %m");
        return respond_ok(r, "{}");
}

static int list(struct agent_request *r)
{
        _cleanup_free_ char *json = NULL;
        if (agent_process_list_json(&json) < 0)
                return agent_respond_connect_error(r, "internal", "out of memory");
        return respond_ok(r, json);
}

int agent_process_handle_rpc(struct agent_request *r, const char *method)
{
        _cleanup_free_ uint8_t *body = NULL;
        _cleanup_free_ char *unknown = NULL;
        _cleanup_json_ cJSON *root = NULL;
        size_t len;
        int e;

        if (strcmp(method, "List") != 0 && strcmp(method, "SendSignal") != 0 &&
            strcmp(method, "SendInput") != 0 && strcmp(method, "CloseStdin") != 0 &&
            strcmp(method, "Update") != 0)
                return -ENOENT;
        e = agent_request_read_body_all(r, CONNECT_MAX_MESSAGE, &body, &len);
        if (e == -EMSGSIZE)
                return agent_respond_connect_error(r, "resource_exhausted", "request too large");
        if (e < 0)
                return e;
        /* Like envd's authn middleware: a Basic user that does not exist is refused. */
        if (agent_request_basic_user_unknown(r, &unknown))
                return agent_respond_connect_error(r, "unauthenticated", "invalid username: '%s'",
                                                   unknown ? unknown : "");
        root = cJSON_ParseWithLength((const char *)body, len);
        if (!cJSON_IsObject(root))
                return agent_respond_connect_error(r, "invalid_argument", "invalid JSON request");
        if (strcmp(method, "List") == 0)
                return list(r);
        if (strcmp(method, "SendSignal") == 0)
                return send_signal(r, root);
        if (strcmp(method, "SendInput") == 0)
                return send_input(r, root);
        if (strcmp(method, "Update") == 0)
                return update(r, root);
        return close_stdin(r, root);
}

/* ---- Connect (server stream) ---- */

int agent_process_handle_connect(struct agent_request *r)
{
        _cleanup_free_ uint8_t *body = NULL;
        _cleanup_free_ char *unknown = NULL;
        _cleanup_json_ cJSON *root = NULL;
        struct agent_outlog *log = NULL;
        struct agent_selector sel = {0};
        const uint8_t *msg;
        uint32_t msg_len, pid;
        int64_t timeout_ms;
        int e;

        e = agent_request_read_envelope(r, &body, &msg, &msg_len);
        if (e <= 0)
                return e;
        if (agent_request_basic_user_unknown(r, &unknown))
                return agent_respond_stream_error(r, "unauthenticated", "invalid username: '%s'",
                                                  unknown ? unknown : "");
        root = cJSON_ParseWithLength((const char *)msg, msg_len);
        if (!cJSON_IsObject(root))
                return agent_respond_stream_error(r, "invalid_argument", "invalid JSON request");
        {
                const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "process");
                const cJSON *pj = cJSON_GetObjectItemCaseSensitive(p, "pid");
                const cJSON *tj = cJSON_GetObjectItemCaseSensitive(p, "tag");
                if (cJSON_IsString(tj))
                        sel.tag = tj->valuestring;
                else if (cJSON_IsNumber(pj) && pj->valuedouble >= 1 &&
                         pj->valuedouble <= UINT32_MAX)
                        sel.pid = (uint32_t)pj->valuedouble;
                else
                        return agent_respond_stream_error(
                            r, "invalid_argument", "process selector (pid or tag) is required");
        }
        if (agent_parse_connect_timeout(agent_request_header(r, "Connect-Timeout-Ms"),
                                        &timeout_ms) < 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "invalid Connect-Timeout-Ms header");
        if (agent_process_attach(&sel, &pid, &log) < 0) {
                if (sel.tag)
                        return agent_respond_stream_error(r, "not_found",
                                                          "process with tag %s not found", sel.tag);
                return agent_respond_stream_error(r, "not_found", "process with pid %u not found",
                                                  sel.pid);
        }
        e = agent_outlog_serve(
            log, r, pid,
            agent_parse_keepalive(agent_request_header(r, "Keepalive-Ping-Interval")) * 1000,
            timeout_ms);
        agent_outlog_unref(log);
        return e;
}
