/* SPDX-License-Identifier: Apache-2.0 */
/*
 * process.Process/Start (docs/e2b-wire.md §3.3): the StartRequest becomes a process of the
 * table (agent_proc_spawn()), and its events become ProcessEvents on the Connect stream:
 * `start`, `data` as read, `keepalive` after Keepalive-Ping-Interval of silence, `end`, then
 * the end of the stream; a deadline (Connect-Timeout-Ms) ends it with deadline_exceeded. This
 * connection's thread pumps the process; when the client leaves, the process keeps running and
 * its output goes to its retained log only, for Connect.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "connect.h"
#include "core/config.h"
#include "core/server.h"
#include "envd/connect-json.h"
#include "envd/process-rpc.h"
#include "json-util.h"
#include "macros.h"
#include "proc/process-env.h"
#include "proc/process.h"
#include "time-util.h"

#define MAX_ARGS         4096u
#define MAX_REQUEST_ENVS 4096u

struct start_request {
        cJSON *root;
        const cJSON *process;
        const char *cmd;
        const char *cwd; /* NULL when absent */
        const char *tag;
        const cJSON *args;
        const cJSON *envs;
        bool stdin_pipe;
        bool pty;
        unsigned short cols, rows;
};

/* A uint32 PTY.Size field, clamped to what a winsize holds; def when absent or 0. */
static unsigned short pty_dimension(const cJSON *j, unsigned short def)
{
        if (!cJSON_IsNumber(j) || j->valuedouble < 1)
                return def;
        return j->valuedouble > 65535 ? 65535 : (unsigned short)j->valuedouble;
}

/* Validate the JSON and point into it. -EINVAL with a message in *ret_msg. */
static int start_request_parse(const char *json, size_t len, struct start_request *ret,
                               const char **ret_msg)
{
        cJSON *root = cJSON_ParseWithLength(json, len);
        const cJSON *j, *e;
        struct start_request q = {.root = root, .stdin_pipe = true};

        *ret_msg = "invalid StartRequest JSON";
        if (!root || !cJSON_IsObject(root))
                goto bad;
        q.process = cJSON_GetObjectItemCaseSensitive(root, "process");
        if (!cJSON_IsObject(q.process)) {
                *ret_msg = "process config is required";
                goto bad;
        }
        j = cJSON_GetObjectItemCaseSensitive(q.process, "cmd");
        if (!cJSON_IsString(j) || !*j->valuestring) {
                *ret_msg = "process.cmd must be a non-empty string";
                goto bad;
        }
        q.cmd = j->valuestring;
        q.args = cJSON_GetObjectItemCaseSensitive(q.process, "args");
        if (q.args && !cJSON_IsNull(q.args)) {
                if (!cJSON_IsArray(q.args) || (unsigned)cJSON_GetArraySize(q.args) > MAX_ARGS)
                        goto bad;
                cJSON_ArrayForEach(e, q.args)
                {
                        if (!cJSON_IsString(e))
                                goto bad;
                }
        } else
                q.args = NULL;
        q.envs = cJSON_GetObjectItemCaseSensitive(q.process, "envs");
        if (q.envs && !cJSON_IsNull(q.envs)) {
                if (!cJSON_IsObject(q.envs) ||
                    (unsigned)cJSON_GetArraySize(q.envs) > MAX_REQUEST_ENVS)
                        goto bad;
                cJSON_ArrayForEach(e, q.envs)
                {
                        if (!cJSON_IsString(e) || !*e->string || strchr(e->string, '=')) {
                                *ret_msg = "process.envs must map names to strings";
                                goto bad;
                        }
                }
        } else
                q.envs = NULL;
        j = cJSON_GetObjectItemCaseSensitive(q.process, "cwd");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsString(j))
                        goto bad;
                q.cwd = j->valuestring;
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "tag");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsString(j))
                        goto bad;
                q.tag = j->valuestring;
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "stdin");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsBool(j))
                        goto bad;
                q.stdin_pipe = cJSON_IsTrue(j); /* absent means true, as in envd */
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "pty");
        if (j && !cJSON_IsNull(j)) {
                const cJSON *size = cJSON_GetObjectItemCaseSensitive(j, "size");
                if (!cJSON_IsObject(j) || (size && !cJSON_IsNull(size) && !cJSON_IsObject(size)))
                        goto bad;
                q.pty = true;
                q.cols = pty_dimension(cJSON_GetObjectItemCaseSensitive(size, "cols"), 80);
                q.rows = pty_dimension(cJSON_GetObjectItemCaseSensitive(size, "rows"), 24);
        }
        *ret = q;
        return 0;
bad:
        if (root)
                cJSON_Delete(root);
        return -EINVAL;
}

/* Connect code for a spawn error of agent_proc_spawn(). */
static const char *spawn_error_code(int e)
{
        switch (e) {
        case -EAGAIN:
        case -ENOMEM:
        case -EMFILE:
        case -ENFILE:
        case -ENOSPC:
                return "resource_exhausted";
        default:
                return "invalid_argument";
        }
}

/* ---- the stream ---- */

struct start_stream {
        struct agent_request *r;
        pid_t pid;
        int keepalive_ms;
        int64_t next_keepalive;
};

/* The client is gone or unusable: stop sending, give the connection slot back (the thread
 * keeps pumping), and detach. */
static int start_detach(struct start_stream *s, int e)
{
        (void)shutdown(s->r->fd, SHUT_RDWR);
        agent_server_release_slot(s->r);
        return e < 0 ? e : -EPIPE;
}

static int start_send(struct start_stream *s, int built, char *json, size_t len)
{
        int e = built < 0 ? built : agent_respond_envelope(s->r, 0, json, len);
        free(json);
        s->next_keepalive = now_ms() + s->keepalive_ms;
        return e < 0 ? start_detach(s, e) : 0;
}

static int start_started(void *userdata, pid_t pid)
{
        static const char *const headers[] = {"Content-Type", "application/connect+json", NULL};
        struct start_stream *s = userdata;
        char *json = NULL;
        size_t len = 0;
        int e;

        s->pid = pid;
        e = agent_respond_head(s->r, 200, headers);
        if (e < 0)
                return start_detach(s, e);
        e = cj_event_start((uint32_t)pid, &json, &len);
        return start_send(s, e, json, len);
}

static int start_output(void *userdata, enum agent_output_stream stream, const uint8_t *buf,
                        size_t len)
{
        struct start_stream *s = userdata;
        char *json = NULL;
        size_t n = 0;
        /* A blocking write: while the client is slow the pump does not read the pipes, so the
         * process blocks on a full pipe (backpressure) and nothing piles up here. */
        int e = cj_event_data(stream, buf, len, &json, &n);
        return start_send(s, e, json, n);
}

static int start_prepare(void *userdata, struct pollfd fds[AGENT_PROC_LISTENER_FDS],
                         int *timeout_ms)
{
        struct start_stream *s = userdata;
        int64_t left = s->next_keepalive - now_ms();

        fds[0] = (struct pollfd){.fd = s->r->fd, .events = POLLIN | POLLRDHUP};
        *timeout_ms = (int)MAX(left, (int64_t)0);
        return 0;
}

static int start_dispatch(void *userdata, const struct pollfd fds[AGENT_PROC_LISTENER_FDS])
{
        struct start_stream *s = userdata;

        if (fds[0].revents) {
                char c;
                /* The request (with its END) has been read completely: anything readable now is
                 * EOF, an error or a protocol violation. In all cases the client is gone. */
                ssize_t n = recv(s->r->fd, &c, 1, MSG_DONTWAIT);
                if (!(n < 0 && (errno == EAGAIN || errno == EINTR)))
                        return start_detach(s, -ECONNRESET);
        }
        if (now_ms() >= s->next_keepalive) {
                char *json = NULL;
                size_t len = 0;
                int e = cj_event_keepalive(&json, &len);
                return start_send(s, e, json, len);
        }
        return 0;
}

static int start_exited(void *userdata, const struct agent_exit *ex, bool deadline_killed)
{
        struct start_stream *s = userdata;
        _cleanup_free_ char *end = NULL, *eos = NULL;
        size_t end_len, eos_len;
        int e;

        if (deadline_killed)
                return agent_respond_stream_error(
                    s->r, "deadline_exceeded", "process %d killed: timeout exceeded", (int)s->pid);
        if ((e = cj_event_end(ex, &end, &end_len)) < 0 ||
            (e = agent_respond_envelope(s->r, 0, end, end_len)) < 0 ||
            (e = agent_end_stream_json(NULL, NULL, &eos, &eos_len)) < 0 ||
            (e = agent_respond_envelope(s->r, CONNECT_FLAG_END_STREAM, eos, eos_len)) < 0)
                return e;
        return agent_respond_end(s->r);
}

/* ---- Start ---- */

int agent_process_handle_start(struct agent_request *r)
{
        _cleanup_free_ uint8_t *body = NULL;
        _cleanup_free_ char *username = NULL;
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_json_ cJSON *root = NULL;
        struct start_request q = {0};
        struct agent_proc *p;
        char err[AGENT_PROC_ERR_MAX];
        const uint8_t *msg;
        const char *why;
        uint32_t msg_len;
        int64_t timeout_ms;
        int e;

        e = agent_request_read_envelope(r, &body, &msg, &msg_len);
        if (e != 0)
                return e;
        if (start_request_parse((const char *)msg, msg_len, &q, &why) < 0)
                return agent_respond_stream_error(r, "invalid_argument", "%s", why);
        root = q.root;

        e = agent_request_user(r, NULL, &u, &username);
        if (e == -ENOENT || e == -EINVAL)
                return agent_respond_stream_error(r, "unauthenticated", "invalid username: '%s'",
                                                  username ? username : "");
        if (e < 0)
                return agent_respond_stream_error(r, "internal", "user lookup: %s", strerror(-e));
        if (agent_parse_connect_timeout(agent_request_header(r, "Connect-Timeout-Ms"),
                                        &timeout_ms) < 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "invalid Connect-Timeout-Ms header");
        if (agent_process_build_argv(q.cmd, q.args, &argv) < 0)
                return agent_respond_stream_error(r, "internal", "out of memory");

        struct agent_proc_spec spec = {
            .argv = (const char *const *)argv,
            .envs = q.envs,
            .cwd = q.cwd,
            .user = &u,
            .tag = q.tag,
            .config = q.process,
            .stdin_pipe = q.stdin_pipe,
            .pty = q.pty,
            .cols = q.cols,
            .rows = q.rows,
            .timeout_ms = timeout_ms,
        };
        e = agent_proc_spawn(&spec, &p, err);
        if (e == -EINVAL || e == -ENOENT) /* the cwd */
                return agent_respond_stream_error(r, "invalid_argument", "%s", err);
        if (e < 0)
                return agent_respond_stream_error(r, spawn_error_code(e), "%s", err);

        struct start_stream s = {
            .r = r,
            .keepalive_ms =
                agent_parse_keepalive(agent_request_header(r, "Keepalive-Ping-Interval")) * 1000,
        };
        s.next_keepalive = now_ms() + s.keepalive_ms;
        const struct agent_proc_listener l = {
            .userdata = &s,
            .started = start_started,
            .output = start_output,
            .exited = start_exited,
            .prepare = start_prepare,
            .dispatch = start_dispatch,
        };
        return agent_proc_run(p, &l);
}
