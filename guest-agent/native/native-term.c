/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /v1/terminal?cols=&rows=&user= (port 0): an interactive login shell on a PTY, full
 * duplex over one frame-channel request. The shell is an ordinary process of the table (user,
 * env, reaping), pumped by this connection's thread; input and resizes go to it by pid.
 * GET /v1/terminal?session=ID&cols=&rows= takes an existing shell over (its log replayed
 * first, then live), after its connection was lost (native-term-session.h).
 *
 * Request DATA frames (from sbxd): byte 0 = NATIVE_TERM_INPUT + bytes for the pty, or
 * NATIVE_TERM_RESIZE + cols u16 BE + rows u16 BE, or NATIVE_TERM_DETACH alone: sbxd lost its
 * client, so the end of this connection leaves the shell running for NATIVE_TERM_DETACH_MS.
 * The connection's end without it (END, or a closed connection) hangs the shell up (SIGKILL to
 * its process group) when this connection owns the session.
 * Response: 200, then DATA frames: NATIVE_TERM_SESSION + the session id first, then
 * NATIVE_TERM_OUTPUT + pty bytes, and last NATIVE_TERM_EXIT + the exit code as decimal text;
 * then END.
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
#include "native/native-term-session.h"
#include "proc/process.h"

enum {
        NATIVE_TERM_INPUT = 0,
        NATIVE_TERM_RESIZE = 1,
        NATIVE_TERM_DETACH = 2, /* sbxd lost the client: keep the shell for a taker */
        NATIVE_TERM_OUTPUT = 0,
        NATIVE_TERM_EXIT = 1,
        NATIVE_TERM_SESSION = 2, /* the session id, first of all */
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

/* One connection to a session's shell: the one that started it (whose thread pumps the shell)
 * or one that took it over (native-term-session.h). */
struct term {
        struct agent_request *r;
        pid_t pid;
        struct term_session *sess;
        uint64_t gen;    /* this connection's generation of the session */
        bool input_open; /* sbxd may still send frames */
        bool detached;   /* sbxd lost its client (a detach frame) or this connection failed */
};

static void term_kill(struct term *t)
{
        (void)agent_proc_signal(&(struct agent_selector){.pid = (uint32_t)t->pid}, SIGKILL);
}

static bool term_owner(struct term *t)
{
        return !t->detached && term_session_owns(t->sess, t->gen);
}

/* One frame from sbxd: 0, -EPIPE once the connection ended, -EPROTO for a bad frame. The
 * connection's end closes the shell when it came without a detach frame (the user closed the
 * terminal) and this connection owned the session. */
static int term_input(struct term *t)
{
        const struct agent_selector sel = {.pid = (uint32_t)t->pid};
        const uint8_t *d;
        size_t n;
        int e = agent_request_read_body(t->r, &d, &n);
        if (e <= 0) {
                t->input_open = false;
                if (term_owner(t))
                        term_kill(t);
                return -EPIPE;
        }
        if (n == 1 && d[0] == NATIVE_TERM_DETACH) {
                term_session_detach(t->sess, t->gen);
                t->detached = true;
                return 0;
        }
        if (!term_owner(t))
                return 0; /* another connection took the session over */
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

/* A send to sbxd failed: what it sent before closing says whether its client was lost (a
 * detach frame: the shell waits for a taker) or the terminal was closed (the shell goes). */
static void term_lost(struct term *t)
{
        while (t->input_open) {
                struct pollfd p = {.fd = t->r->fd, .events = POLLIN};
                if (poll(&p, 1, 0) <= 0 || term_input(t) == -EPROTO)
                        break;
        }
        if (term_owner(t))
                term_kill(t);
        t->input_open = false;
        t->detached = true;
}

/* Output and exit, to this connection while it owns the session (a taker replays the log). */
static int term_output(void *userdata, enum agent_output_stream stream, const uint8_t *buf,
                       size_t len)
{
        struct term *t = userdata;
        if (term_owner(t) && send_tagged(t->r, NATIVE_TERM_OUTPUT, buf, len) < 0)
                term_lost(t);
        return 0;
}

static int term_exited(void *userdata, const struct agent_exit *ex, bool deadline_killed)
{
        struct term *t = userdata;
        char code[16];
        term_session_done(t->sess);
        if (!term_owner(t))
                return 0;
        int n = snprintf(code, sizeof(code), "%d", deadline_killed ? -1 : (int)ex->exit_code);
        int e = send_tagged(t->r, NATIVE_TERM_EXIT, code, (size_t)n);
        return e < 0 ? e : 0;
}

/* The pump's wait: this connection's frames, and at least once a second the session's owner
 * (a session left without one past NATIVE_TERM_DETACH_MS ends its shell). */
static int term_prepare(void *userdata, struct pollfd fds[AGENT_PROC_LISTENER_FDS], int *timeout_ms)
{
        struct term *t = userdata;
        int left = term_session_orphan_ms(t->sess);
        fds[0] = (struct pollfd){.fd = t->input_open ? t->r->fd : -1, .events = POLLIN};
        *timeout_ms = left < 0 || left > 1000 ? 1000 : left;
        return 0;
}

static int term_dispatch(void *userdata, const struct pollfd fds[AGENT_PROC_LISTENER_FDS])
{
        struct term *t = userdata;
        if (fds[0].fd >= 0 && fds[0].revents && term_input(t) == -EPROTO) {
                term_kill(t);
                return -EPROTO;
        }
        if (term_session_orphan_ms(t->sess) == 0)
                term_kill(t); /* nobody took it over in time */
        return 0;
}

/* A taker's listener: the shell's log from its start, then live; stops once another
 * connection takes the session or this one ends. */
static int take_output(void *userdata, enum agent_output_stream stream, const uint8_t *buf,
                       size_t len)
{
        struct term *t = userdata;
        if (!term_owner(t))
                return 1;
        if (send_tagged(t->r, NATIVE_TERM_OUTPUT, buf, len) < 0) {
                term_lost(t);
                return 1;
        }
        return 0;
}

static int take_prepare(void *userdata, struct pollfd fds[AGENT_PROC_LISTENER_FDS], int *timeout_ms)
{
        struct term *t = userdata;
        fds[0] = (struct pollfd){.fd = t->input_open ? t->r->fd : -1, .events = POLLIN};
        return 0;
}

static int take_dispatch(void *userdata, const struct pollfd fds[AGENT_PROC_LISTENER_FDS])
{
        struct term *t = userdata;
        if (fds[0].fd >= 0 && fds[0].revents && term_input(t) == -EPROTO) {
                if (term_owner(t))
                        term_kill(t);
                return -EPROTO;
        }
        return term_owner(t) && t->input_open ? 0 : 1;
}

static const char *const term_headers[] = {"Content-Type", "application/octet-stream", NULL};

/* GET /v1/terminal?session=ID: take the session's shell over. */
static int term_take(struct agent_request *r, const char *id)
{
        struct term t = {.r = r, .input_open = true};
        if (term_session_take(id, &t.sess, &t.gen, &t.pid) < 0)
                return native_error(r, 404, "not_found",
                                    "no terminal session %s: its shell ended, or it was never "
                                    "here",
                                    id);
        const struct agent_selector sel = {.pid = (uint32_t)t.pid};
        (void)agent_proc_resize(&sel, (unsigned short)dim(r, "cols", 80),
                                (unsigned short)dim(r, "rows", 24));
        int e = agent_respond_head(r, 200, term_headers);
        if (e >= 0)
                e = send_tagged(r, NATIVE_TERM_SESSION, id, strlen(id));
        if (e >= 0) {
                r->body_done = false;
                const struct agent_proc_listener l = {.userdata = &t,
                                                      .output = take_output,
                                                      .exited = term_exited,
                                                      .prepare = take_prepare,
                                                      .dispatch = take_dispatch};
                e = agent_proc_attach(&sel, &l);
        }
        bool ended = term_owner(&t);
        term_session_unref(t.sess, false);
        if (e < 0 && e != -ESRCH)
                return e;
        return ended ? agent_respond_end(r) : 200;
}

int native_handle_terminal(struct agent_request *r)
{
        _cleanup_free_ char *uq = native_query(r, "user");
        _cleanup_free_ char *sq = native_query(r, "session");
        _cleanup_json_ cJSON *envs = cJSON_CreateObject();
        struct agent_proc *p;
        const char *user;
        char id[NATIVE_TERM_ID_LEN + 1];
        int e;

        /* The request body is the input stream and stays open: errors must not wait for its
         * END (native_error would drain it). */
        r->body_done = true;
        if (sq)
                return term_take(r, sq);
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
        e = term_session_new(t.pid, id, &t.sess);
        t.gen = 1; /* the creator's generation */
        if (e < 0) {
                term_kill(&t);
                (void)agent_proc_run(p, NULL);
                r->body_done = true;
                return native_error(r, e == -EBUSY ? 503 : 500, NULL, "starting the terminal: %s",
                                    e == -EBUSY ? "too many terminal sessions" : strerror(-e));
        }
        const struct agent_proc_listener l = {
            .userdata = &t,
            .output = term_output,
            .exited = term_exited,
            .prepare = term_prepare,
            .dispatch = term_dispatch,
        };
        e = agent_respond_head(r, 200, term_headers);
        if (e >= 0)
                e = send_tagged(r, NATIVE_TERM_SESSION, id, strlen(id));
        if (e < 0) {
                term_kill(&t);
                (void)agent_proc_run(p, NULL);
                term_session_unref(t.sess, true);
                return e;
        }
        e = agent_proc_run(p, &l);
        bool owner = term_owner(&t);
        term_session_unref(t.sess, true);
        if (e < 0)
                return e;
        return owner ? agent_respond_end(r) : 200;
}
