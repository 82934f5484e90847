/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /v1/terminal?cols=&rows=&user= (port 0): an interactive login shell on a PTY, full
 * duplex over one frame-channel request. The shell is an ordinary process of the table (user,
 * env, reaping), pumped by this connection's thread; input and resizes go to it by pid.
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

#include "json-util.h"
#include "macros.h"
#include "native/native.h"
#include "proc/process.h"

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

struct term {
        struct agent_request *r;
        pid_t pid;
        bool input_open;
};

static void term_kill(struct term *t)
{
        (void)agent_proc_signal(&(struct agent_selector){.pid = (uint32_t)t->pid}, SIGKILL);
}

/* One input frame from sbxd: 0 on success, -EPIPE at END, -errno. */
static int term_input(struct term *t)
{
        const struct agent_selector sel = {.pid = (uint32_t)t->pid};
        const uint8_t *d;
        size_t n;
        int e = agent_request_read_body(t->r, &d, &n);
        if (e <= 0)
                return e == 0 ? -EPIPE : e;
        if (n >= 1 && d[0] == NATIVE_TERM_INPUT) {
                /* Without waiting: what the terminal does not take now is dropped; a hung-up
                 * pty is fine too (the exit follows). */
                (void)agent_proc_write_input(&sel, true, d + 1, n - 1, -1, 0);
                return 0;
        }
        if (n == 5 && d[0] == NATIVE_TERM_RESIZE) {
                unsigned short cols = (unsigned short)(d[1] << 8 | d[2]);
                unsigned short rows = (unsigned short)(d[3] << 8 | d[4]);
                if (cols >= 1 && rows >= 1)
                        (void)agent_proc_resize(&sel, cols, rows);
                return 0;
        }
        return -EPROTO;
}

static int term_output(void *userdata, enum agent_output_stream stream, const uint8_t *buf,
                       size_t len)
{
        struct term *t = userdata;
        int e = send_tagged(t->r, NATIVE_TERM_OUTPUT, buf, len);
        if (e < 0)
                term_kill(t);
        return e;
}

static int term_exited(void *userdata, const struct agent_exit *ex, bool deadline_killed)
{
        struct term *t = userdata;
        char code[16];
        int n = snprintf(code, sizeof(code), "%d", deadline_killed ? -1 : (int)ex->exit_code);
        int e = send_tagged(t->r, NATIVE_TERM_EXIT, code, (size_t)n);
        return e < 0 ? e : 0;
}

static int term_prepare(void *userdata, struct pollfd fds[AGENT_PROC_LISTENER_FDS], int *timeout_ms)
{
        struct term *t = userdata;
        fds[0] = (struct pollfd){.fd = t->input_open ? t->r->fd : -1, .events = POLLIN};
        return 0;
}

static int term_dispatch(void *userdata, const struct pollfd fds[AGENT_PROC_LISTENER_FDS])
{
        struct term *t = userdata;
        int e;

        if (fds[0].fd < 0 || !fds[0].revents)
                return 0;
        e = term_input(t);
        if (e < 0) {
                /* sbxd hung up: the shell goes too */
                term_kill(t);
                t->input_open = false;
                if (e != -EPIPE)
                        return e;
        }
        return 0;
}

int native_handle_terminal(struct agent_request *r)
{
        static const char *const hs[] = {"Content-Type", "application/octet-stream", NULL};
        _cleanup_free_ char *uq = native_query(r, "user");
        _cleanup_json_ cJSON *envs = cJSON_CreateObject();
        struct agent_proc *p;
        const char *user;
        int e;

        /* The request body is the input stream and stays open: errors must not wait for its
         * END (native_error would drain it). */
        r->body_done = true;
        if (native_user_name(uq, &user) < 0)
                return native_error(r, 400, "bad_request", "user must be \"user\" or \"root\"");
        if (!envs || !cJSON_AddStringToObject(envs, "TERM", "xterm-256color"))
                return native_error(r, 500, "internal", "out of memory");
        const char *bash[] = {"/bin/bash", "-l", NULL}, *sh[] = {"/bin/sh", "-l", NULL};
        struct agent_proc_spec spec = {.argv = access("/bin/bash", X_OK) == 0 ? bash : sh,
                                       .envs = envs,
                                       .pty = true,
                                       .cols = (unsigned short)dim(r, "cols", 80),
                                       .rows = (unsigned short)dim(r, "rows", 24)};
        e = native_spawn(r, user, &spec, spec.envs, NULL, "starting the terminal: ", NULL, &p);
        if (e != 0)
                return e;
        r->body_done = false;

        struct term t = {.r = r, .pid = agent_proc_pid(p), .input_open = true};
        const struct agent_proc_listener l = {
            .userdata = &t,
            .output = term_output,
            .exited = term_exited,
            .prepare = term_prepare,
            .dispatch = term_dispatch,
        };
        e = agent_respond_head(r, 200, hs);
        if (e < 0) {
                term_kill(&t);
                (void)agent_proc_run(p, NULL);
                return e;
        }
        e = agent_proc_run(p, &l);
        if (e < 0) {
                term_kill(&t);
                return e;
        }
        return agent_respond_end(r);
}
