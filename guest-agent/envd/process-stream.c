/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/process-stream.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "connect.h"
#include "core/server.h"
#include "envd/connect-json.h"
#include "macros.h"
#include "time-util.h"

void agent_process_stream_init(struct agent_process_stream *s, struct agent_request *r,
                               int64_t timeout_ms, bool starter)
{
        int64_t now = now_ms();

        *s = (struct agent_process_stream){
            .r = r,
            .keepalive_ms =
                agent_parse_keepalive(agent_request_header(r, "Keepalive-Ping-Interval")) * 1000,
            .deadline = timeout_ms > 0 ? now + timeout_ms : 0,
            .starter = starter,
        };
        s->next_keepalive = now + s->keepalive_ms;
}

/* The client is gone or unusable (e < 0, else -EPIPE). A starter stops sending and gives the
 * connection slot back (the thread keeps pumping); either way the listener detaches. */
static int stream_fail(struct agent_process_stream *s, int e)
{
        if (s->starter) {
                (void)shutdown(s->r->fd, SHUT_RDWR);
                agent_server_release_slot(s->r);
        }
        return e < 0 ? e : -EPIPE;
}

/* Send a message built just before (built: the builder's result) and free it. */
static int stream_send(struct agent_process_stream *s, int built, char *json, size_t len)
{
        int e = built < 0 ? built : agent_respond_envelope(s->r, 0, json, len);
        free(json);
        s->next_keepalive = now_ms() + s->keepalive_ms;
        return e < 0 ? stream_fail(s, e) : 0;
}

static int stream_started(void *userdata, pid_t pid)
{
        static const char *const headers[] = {"Content-Type", "application/connect+json", NULL};
        struct agent_process_stream *s = userdata;
        char *json = NULL;
        size_t len = 0;
        int e;

        s->pid = pid;
        e = agent_respond_head(s->r, 200, headers);
        if (e < 0)
                return stream_fail(s, e);
        e = cj_event_start((uint32_t)pid, &json, &len);
        return stream_send(s, e, json, len);
}

static int stream_output(void *userdata, enum agent_output_stream stream, const uint8_t *buf,
                         size_t len)
{
        char *json = NULL;
        size_t n = 0;
        /* A blocking write: while the client is slow the pump does not read the pipes, so the
         * process blocks on a full pipe (backpressure) and nothing piles up here. */
        int e = cj_event_data(stream, buf, len, &json, &n);
        return stream_send(userdata, e, json, n);
}

static int stream_prepare(void *userdata, struct pollfd fds[AGENT_PROC_LISTENER_FDS],
                          int *timeout_ms)
{
        struct agent_process_stream *s = userdata;
        int64_t until = s->next_keepalive;

        if (s->deadline)
                until = MIN(until, s->deadline);
        fds[0] = (struct pollfd){.fd = s->r->fd, .events = POLLIN | POLLRDHUP};
        *timeout_ms = (int)MAX(until - now_ms(), (int64_t)0);
        return 0;
}

static int stream_dispatch(void *userdata, const struct pollfd fds[AGENT_PROC_LISTENER_FDS])
{
        struct agent_process_stream *s = userdata;
        int64_t now = now_ms();

        if (s->deadline && now >= s->deadline)
                return agent_respond_stream_error(s->r, "deadline_exceeded",
                                                  "connect timeout exceeded");
        if (fds[0].revents) {
                char c;
                /* The request (with its END) has been read completely: anything readable now is
                 * EOF, an error or a protocol violation. In all cases the client is gone. */
                ssize_t n = recv(s->r->fd, &c, 1, MSG_DONTWAIT);
                if (!(n < 0 && (errno == EAGAIN || errno == EINTR)))
                        return stream_fail(s, -ECONNRESET);
        }
        if (now >= s->next_keepalive) {
                char *json = NULL;
                size_t len = 0;
                int e = cj_event_keepalive(&json, &len);
                return stream_send(s, e, json, len);
        }
        return 0;
}

static int stream_exited(void *userdata, const struct agent_exit *ex, bool deadline_killed)
{
        struct agent_process_stream *s = userdata;
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

struct agent_proc_listener agent_process_stream_listener(struct agent_process_stream *s)
{
        return (struct agent_proc_listener){
            .userdata = s,
            .started = stream_started,
            .output = stream_output,
            .exited = stream_exited,
            .prepare = stream_prepare,
            .dispatch = stream_dispatch,
        };
}
