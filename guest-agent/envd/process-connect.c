/* SPDX-License-Identifier: Apache-2.0 */
/*
 * process.Process/Connect (re-attach, docs/e2b-wire.md §3.5): attach to a running or finished
 * process by pid or tag (agent_proc_attach()) and stream it as Start does: `start` with the pid,
 * the retained output, live output, keepalives, then `end` and the end of the stream.
 * Connect-Timeout-Ms ends this stream (deadline_exceeded), not the process.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "connect.h"
#include "envd/connect-json.h"
#include "envd/process-rpc.h"
#include "json-util.h"
#include "macros.h"
#include "proc/process.h"
#include "time-util.h"

struct connect_stream {
        struct agent_request *r;
        pid_t pid;
        int keepalive_ms;
        int64_t next_keepalive;
        int64_t deadline; /* CLOCK_MONOTONIC ms, 0: none */
};

/* Send a message built just before (built: the builder's result) and free it. */
static int connect_send(struct connect_stream *s, int built, char *json, size_t len)
{
        int e = built < 0 ? built : agent_respond_envelope(s->r, 0, json, len);
        free(json);
        s->next_keepalive = now_ms() + s->keepalive_ms;
        return e;
}

static int connect_started(void *userdata, pid_t pid)
{
        static const char *const headers[] = {"Content-Type", "application/connect+json", NULL};
        struct connect_stream *s = userdata;
        char *json = NULL;
        size_t len = 0;
        int e;

        s->pid = pid;
        if ((e = agent_respond_head(s->r, 200, headers)) < 0)
                return e;
        e = cj_event_start((uint32_t)pid, &json, &len);
        return connect_send(s, e, json, len);
}

static int connect_output(void *userdata, enum agent_output_stream stream, const uint8_t *buf,
                          size_t len)
{
        char *json = NULL;
        size_t n = 0;
        int e = cj_event_data(stream, buf, len, &json, &n);
        return connect_send(userdata, e, json, n);
}

static int connect_prepare(void *userdata, struct pollfd fds[AGENT_PROC_LISTENER_FDS],
                           int *timeout_ms)
{
        struct connect_stream *s = userdata;
        int64_t until = s->next_keepalive;

        if (s->deadline)
                until = MIN(until, s->deadline);
        fds[0] = (struct pollfd){.fd = s->r->fd, .events = POLLIN | POLLRDHUP};
        *timeout_ms = (int)MAX(until - now_ms(), (int64_t)0);
        return 0;
}

static int connect_dispatch(void *userdata, const struct pollfd fds[AGENT_PROC_LISTENER_FDS])
{
        struct connect_stream *s = userdata;
        int64_t now = now_ms();

        if (s->deadline && now >= s->deadline)
                return agent_respond_stream_error(s->r, "deadline_exceeded",
                                                  "connect timeout exceeded");
        if (fds[0].revents) {
                char c;
                /* The request was read to its END: readable means the client is gone. */
                ssize_t n = recv(s->r->fd, &c, 1, MSG_DONTWAIT);
                if (!(n < 0 && (errno == EAGAIN || errno == EINTR)))
                        return -ECONNRESET;
        }
        if (now >= s->next_keepalive) {
                char *json = NULL;
                size_t len = 0;
                int e = cj_event_keepalive(&json, &len);
                return connect_send(s, e, json, len);
        }
        return 0;
}

static int connect_exited(void *userdata, const struct agent_exit *ex, bool deadline_killed)
{
        struct connect_stream *s = userdata;
        _cleanup_free_ char *end = NULL, *eos = NULL;
        size_t end_len, eos_len;
        int e;

        if (deadline_killed)
                return agent_respond_stream_error(s->r, "deadline_exceeded",
                                                  "process %u killed: timeout exceeded",
                                                  (unsigned)s->pid);
        if ((e = cj_event_end(ex, &end, &end_len)) < 0 ||
            (e = agent_respond_envelope(s->r, 0, end, end_len)) < 0 ||
            (e = agent_end_stream_json(NULL, NULL, &eos, &eos_len)) < 0 ||
            (e = agent_respond_envelope(s->r, CONNECT_FLAG_END_STREAM, eos, eos_len)) < 0)
                return e;
        return agent_respond_end(s->r);
}

/* {"process":{"pid":N}} or {"process":{"tag":"x"}}. */
static int connect_selector(const cJSON *root, struct agent_selector *ret)
{
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "process");
        const cJSON *pj = cJSON_GetObjectItemCaseSensitive(p, "pid");
        const cJSON *tj = cJSON_GetObjectItemCaseSensitive(p, "tag");

        *ret = (struct agent_selector){0};
        if (cJSON_IsString(tj))
                ret->tag = tj->valuestring;
        else if (cJSON_IsNumber(pj) && pj->valuedouble >= 1 && pj->valuedouble <= UINT32_MAX)
                ret->pid = (uint32_t)pj->valuedouble;
        else
                return -EINVAL;
        return 0;
}

int agent_process_handle_connect(struct agent_request *r)
{
        _cleanup_free_ uint8_t *body = NULL;
        _cleanup_free_ char *unknown = NULL;
        _cleanup_json_ cJSON *root = NULL;
        struct agent_selector sel;
        const uint8_t *msg;
        uint32_t msg_len;
        int64_t timeout_ms;
        int e;

        e = agent_request_read_envelope(r, &body, &msg, &msg_len);
        if (e != 0)
                return e;
        if (agent_request_basic_user_unknown(r, &unknown))
                return agent_respond_stream_error(r, "unauthenticated", "invalid username: '%s'",
                                                  unknown ? unknown : "");
        root = cJSON_ParseWithLength((const char *)msg, msg_len);
        if (!cJSON_IsObject(root))
                return agent_respond_stream_error(r, "invalid_argument", "invalid JSON request");
        if (connect_selector(root, &sel) < 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "process selector (pid or tag) is required");
        if (agent_parse_connect_timeout(agent_request_header(r, "Connect-Timeout-Ms"),
                                        &timeout_ms) < 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "invalid Connect-Timeout-Ms header");

        struct connect_stream s = {
            .r = r,
            .keepalive_ms =
                agent_parse_keepalive(agent_request_header(r, "Keepalive-Ping-Interval")) * 1000,
            .deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0,
        };
        s.next_keepalive = now_ms() + s.keepalive_ms;
        const struct agent_proc_listener l = {
            .userdata = &s,
            .started = connect_started,
            .output = connect_output,
            .exited = connect_exited,
            .prepare = connect_prepare,
            .dispatch = connect_dispatch,
        };
        e = agent_proc_attach(&sel, &l);
        if (e == -ESRCH) {
                if (sel.tag)
                        return agent_respond_stream_error(r, "not_found",
                                                          "process with tag %s not found", sel.tag);
                return agent_respond_stream_error(r, "not_found", "process with pid %u not found",
                                                  sel.pid);
        }
        if (e == -ENOMEM && r->resp_started)
                return agent_respond_stream_error(r, "internal", "out of memory");
        return e;
}
