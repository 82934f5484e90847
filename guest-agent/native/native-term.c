/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /v1/terminal?cols=&rows=&user= (port 0): an interactive login shell on a PTY, full
 * duplex over one frame-channel request. The shell is started through the loopback (so it is
 * an ordinary process of the table: user, env, reaping), its pty master reached through
 * agent_process_input_fd().
 *
 * Request DATA frames (from sbxd): byte 0 = NATIVE_TERM_INPUT + bytes for the pty, or
 * NATIVE_TERM_RESIZE + cols u16 BE + rows u16 BE. END (or a closed connection) hangs the
 * shell up (SIGKILL to its process group).
 * Response: 200, then DATA frames: NATIVE_TERM_OUTPUT + pty bytes, and last
 * NATIVE_TERM_EXIT + the exit code as decimal text; then END.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "native/native-loop.h"
#include "native/native.h"
#include "proc/process.h"
#include "fd-util.h"
#include "macros.h"

enum {
        NATIVE_TERM_INPUT = 0,
        NATIVE_TERM_RESIZE = 1,
        NATIVE_TERM_OUTPUT = 0,
        NATIVE_TERM_EXIT = 1,
};

static unsigned dim(const struct agent_request *r, const char *key, unsigned def)
{
        _cleanup_free_ char *v = native_query(r, key);
        long n = v ? strtol(v, NULL, 10) : 0;
        return n >= 1 && n <= 1000 ? (unsigned)n : def;
}

static int send_tagged(struct agent_request *r, uint8_t tag, const void *d, size_t n)
{
        uint8_t buf[1 + 16384];
        const uint8_t *p = d;
        do {
                size_t k = MIN(n, sizeof(buf) - 1);
                buf[0] = tag;
                memcpy(buf + 1, p, k);
                int e = agent_respond_data(r, buf, k + 1);
                if (e < 0)
                        return e;
                p += k;
                n -= k;
        } while (n > 0);
        return 0;
}

/* One input frame from sbxd: 0 on success, -EPIPE at END, -errno. */
static int term_input(struct agent_request *r, int master)
{
        const uint8_t *d;
        size_t n;
        int e = agent_request_read_body(r, &d, &n);
        if (e <= 0)
                return e == 0 ? -EPIPE : e;
        if (n >= 1 && d[0] == NATIVE_TERM_INPUT) {
                (void)write_full(master, d + 1, n - 1); /* a hung-up pty: the END event follows */
                return 0;
        }
        if (n == 5 && d[0] == NATIVE_TERM_RESIZE) {
                struct winsize ws = {.ws_col = (unsigned short)(d[1] << 8 | d[2]),
                                     .ws_row = (unsigned short)(d[3] << 8 | d[4])};
                if (ws.ws_col >= 1 && ws.ws_row >= 1)
                        (void)ioctl(master, TIOCSWINSZ, &ws);
                return 0;
        }
        return -EPROTO;
}

static int term_loop(struct agent_request *r, struct native_stream *st, int pid, int master)
{
        bool input_open = true;
        for (;;) {
                struct pollfd p[2] = {{.fd = native_stream_fd(st), .events = POLLIN},
                                      {.fd = input_open ? r->fd : -1, .events = POLLIN}};
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[1].revents) {
                        int e = term_input(r, master);
                        if (e < 0) {
                                /* sbxd hung up: the shell goes too */
                                (void)agent_process_signal(
                                    &(struct agent_selector){.pid = (uint32_t)pid}, SIGKILL);
                                input_open = false;
                                if (e != -EPIPE)
                                        return e;
                        }
                }
                if (!p[0].revents)
                        continue;
                struct native_event ev;
                int e = native_stream_next(st, &ev);
                if (e == -EPIPE)
                        return 0;
                if (e < 0)
                        return e;
                if (ev.kind == NATIVE_EV_DATA)
                        e = send_tagged(r, NATIVE_TERM_OUTPUT, ev.data, ev.len);
                else if (ev.kind == NATIVE_EV_END || ev.kind == NATIVE_EV_ERROR) {
                        char code[16];
                        int n = snprintf(code, sizeof(code), "%d",
                                         ev.kind == NATIVE_EV_END ? ev.exit_code : -1);
                        e = send_tagged(r, NATIVE_TERM_EXIT, code, (size_t)n);
                }
                native_event_done(&ev);
                if (e < 0)
                        return e;
        }
}

int native_term_handle(struct agent_request *r)
{
        static const char *const hs[] = {"Content-Type", "application/octet-stream", NULL};
        _cleanup_native_stream_ struct native_stream *st = NULL;
        _cleanup_free_ char *uq = native_query(r, "user");
        _cleanup_close_ int master = -EBADF;
        const char *user;
        char err[600];
        int pid, e;
        bool pty;

        /* The request body is the input stream and stays open: errors must not wait for its
         * END (native_error would drain it). */
        r->body_done = true;
        if (native_user_name(uq, &user) < 0)
                return native_error(r, 400, "bad_request", "user must be \"user\" or \"root\"");
        cJSON *envs = cJSON_CreateObject();
        cJSON_AddStringToObject(envs, "TERM", "xterm-256color");
        const char *bash[] = {"/bin/bash", "-l", NULL}, *sh[] = {"/bin/sh", "-l", NULL};
        struct native_spec spec = {.argv = access("/bin/bash", X_OK) == 0 ? bash : sh,
                                   .user = user,
                                   .envs = envs,
                                   .pty = true,
                                   .cols = dim(r, "cols", 80),
                                   .rows = dim(r, "rows", 24)};
        e = native_stream_start(&spec, &st, &pid, err, sizeof(err));
        cJSON_Delete(envs);
        if (e < 0)
                return native_error(r, e == -EINVAL || e == -EACCES ? 400 : 500,
                                    e == -EINVAL || e == -EACCES ? "bad_request" : "internal",
                                    "starting the terminal: %s", err[0] ? err : strerror(-e));
        e = agent_process_input_fd(&(struct agent_selector){.pid = (uint32_t)pid}, &pty, &master);
        if (e < 0 || !pty) {
                (void)agent_process_signal(&(struct agent_selector){.pid = (uint32_t)pid}, SIGKILL);
                return native_error(r, 500, "internal", "the terminal has no pty");
        }
        r->body_done = false;
        e = agent_respond_head(r, 200, hs);
        if (e >= 0)
                e = term_loop(r, st, pid, master);
        if (e < 0) {
                (void)agent_process_signal(&(struct agent_selector){.pid = (uint32_t)pid}, SIGKILL);
                return e;
        }
        return agent_respond_end(r);
}
