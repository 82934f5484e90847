/* SPDX-License-Identifier: Apache-2.0 */
#include "channel/agent-req.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#include "channel/agent-connect.h"
#include "core/stats.h"
#include "macros.h"
#include "time-util.h"

struct agent_req {
        int fd;
        struct agent_req_opts o;
        int send_error; /* 0, or why sending stopped */
        int client_fd;
        bool watched; /* give up when sbxd stops */
        const atomic_bool *cancel;
        int64_t deadline_ms;
        uint8_t *frame; /* SBX_FRAME_MAX_PAYLOAD: the frame being read */
};

void agent_head_init(struct agent_head *a, uint16_t port, const char *method, const char *path,
                     const char *query, const char *content_type)
{
        a->content_type = (struct sbx_header){"Content-Type", content_type};
        a->h = (struct sbx_req_head){
            .port = port,
            .method = method,
            .path = path,
            .query = query ? query : "",
            .n_headers = content_type ? 1 : 0,
            .headers = content_type ? &a->content_type : NULL,
        };
}

void agent_req_free(struct agent_req *q)
{
        if (!q)
                return;
        safe_close(q->fd);
        free(q->frame);
        free(q);
}

int agent_req_set_timeouts(struct agent_req *q, int recv_ms, int send_ms)
{
        struct timeval r = {.tv_sec = recv_ms / 1000, .tv_usec = (recv_ms % 1000) * 1000};
        struct timeval s = {.tv_sec = send_ms / 1000, .tv_usec = (send_ms % 1000) * 1000};
        if (setsockopt(q->fd, SOL_SOCKET, SO_RCVTIMEO, &r, sizeof(r)) < 0 ||
            setsockopt(q->fd, SOL_SOCKET, SO_SNDTIMEO, &s, sizeof(s)) < 0)
                return -errno;
        return 0;
}

int agent_req_open_fd(int fd, const struct sbx_req_head *head, const struct agent_req_opts *o,
                      struct agent_req **ret)
{
        _cleanup_close_ int owned = fd;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        struct agent_req *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->fd = TAKE_FD(owned);
        q->o = *o;
        q->client_fd = -1;
        q->frame = malloc(SBX_FRAME_MAX_PAYLOAD);
        int r = q->frame ? 0 : -ENOMEM;
        if (r >= 0 && o->timeout_ms > 0)
                r = agent_req_set_timeouts(q, o->timeout_ms, o->timeout_ms);
        if (r >= 0 && sbx_req_head_encode(head, &buf, &len) < 0)
                r = -EINVAL;
        if (r >= 0)
                r = sbx_frame_write(q->fd, SBX_FRAME_REQ_HEAD, buf, len);
        if (r < 0) {
                agent_req_free(q);
                return r;
        }
        *ret = q;
        return 0;
}

int agent_req_open(const char *sandbox_dir, const struct sbx_req_head *head,
                   const struct agent_req_opts *o, struct agent_req **ret)
{
        int64_t t0 = now_ms(), end = t0 + o->connect_retry_ms;
        struct agent_req_opts rest = *o;
        int fd = -EBADF, r;
        for (;;) {
                r = agent_connect(sandbox_dir, &fd);
                if (r >= 0)
                        break;
                if ((r != -ECONNREFUSED && r != -ENOENT && r != -EAGAIN) || now_ms() >= end)
                        return r;
                struct timespec ts = {.tv_nsec = 20 * 1000000L};
                nanosleep(&ts, NULL);
        }
        if (o->connect_retry_ms > 0 && o->timeout_ms > 0)
                rest.timeout_ms = (int)MAX((int64_t)o->timeout_ms - (now_ms() - t0), (int64_t)1000);
        return agent_req_open_fd(fd, head, &rest, ret);
}

static volatile int shutting_down;

void agent_req_shutdown(void)
{
        __atomic_store_n(&shutting_down, 1, __ATOMIC_RELAXED);
}

bool agent_req_stopping(void)
{
        return __atomic_load_n(&shutting_down, __ATOMIC_RELAXED) != 0;
}

void agent_req_watch_client(struct agent_req *q, int client_fd)
{
        q->client_fd = client_fd;
        q->watched = true;
}

void agent_req_watch_cancel(struct agent_req *q, const atomic_bool *cancel, int64_t deadline_ms)
{
        q->cancel = cancel;
        q->deadline_ms = deadline_ms;
}

int agent_req_fd(const struct agent_req *q)
{
        return q->fd;
}

bool agent_req_send_stopped(const struct agent_req *q)
{
        return q->send_error != 0;
}

int agent_req_send(struct agent_req *q, const void *data, size_t len)
{
        const char *p = data;
        int timeout = q->o.timeout_ms > 0 ? q->o.timeout_ms : -1;
        if (q->send_error)
                return q->send_error;
        while (len > 0) {
                if (!q->o.duplex) {
                        struct pollfd pf = {.fd = q->fd, .events = POLLIN | POLLOUT};
                        if (poll(&pf, 1, timeout) <= 0 || (pf.revents & POLLIN)) {
                                q->send_error = -ECANCELED;
                                return q->send_error;
                        }
                }
                size_t k = MIN(len, (size_t)SBX_FRAME_MAX_PAYLOAD);
                int r = sbx_frame_write(q->fd, SBX_FRAME_DATA, p, k);
                if (r < 0) {
                        q->send_error = r;
                        return r;
                }
                if (q->o.count_bytes)
                        stats_count_proxy_bytes(k, 0);
                p += k;
                len -= k;
        }
        return 0;
}

int agent_req_end(struct agent_req *q)
{
        if (q->send_error)
                return q->send_error;
        int r = sbx_frame_write(q->fd, SBX_FRAME_END, NULL, 0);
        if (r < 0)
                q->send_error = r;
        return r;
}

/* Wait until the agent's side is readable; see the header for what ends a wait. */
static int wait_readable(struct agent_req *q)
{
        if (!q->watched && !q->cancel && q->deadline_ms == 0)
                return 0; /* the socket timeouts bound the read */
        int tick = q->cancel ? AGENT_CANCEL_TICK_MS : AGENT_WAIT_TICK_MS;
        for (;;) {
                struct pollfd p[2] = {{.fd = q->fd, .events = POLLIN},
                                      {.fd = q->client_fd, .events = POLLRDHUP}};
                int wait = tick;
                if (q->deadline_ms) {
                        int64_t left = q->deadline_ms - now_ms();
                        if (left <= 0)
                                return -ETIMEDOUT;
                        wait = (int)MIN(left, (int64_t)tick);
                }
                if (q->cancel && atomic_load(q->cancel))
                        return -ECANCELED;
                int n = poll(p, q->client_fd >= 0 ? 2 : 1, wait);
                if (n < 0 && errno != EINTR)
                        return -errno;
                if (__atomic_load_n(&shutting_down, __ATOMIC_RELAXED))
                        return -ECONNABORTED;
                if (n <= 0)
                        continue;
                if (p[0].revents)
                        return 0;
                if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
                        return -ECONNABORTED;
        }
}

static int read_error(int r)
{
        return r == -EAGAIN || r == -EWOULDBLOCK ? -ETIMEDOUT : r;
}

int agent_req_read_head(struct agent_req *q, struct sbx_resp_head *ret)
{
        uint8_t type;
        uint32_t len;
        int r = wait_readable(q);
        if (r >= 0)
                r = read_error(sbx_frame_read(q->fd, &type, q->frame, &len));
        if (r < 0)
                return r;
        if (type != SBX_FRAME_RESP_HEAD || sbx_resp_head_decode(q->frame, len, ret) < 0)
                return -EPROTO;
        return 0;
}

int agent_req_next(struct agent_req *q, const uint8_t **ret_data, uint32_t *ret_len)
{
        uint32_t len;
        int r = wait_readable(q);
        if (r >= 0)
                r = read_error(sbx_frame_read_body(q->fd, q->frame, &len));
        if (r <= 0)
                return r;
        if (q->o.count_bytes)
                stats_count_proxy_bytes(0, len);
        *ret_data = q->frame;
        *ret_len = len;
        return 1;
}

int agent_req_read_body(struct agent_req *q, size_t max, struct buf *ret)
{
        size_t start = ret->len;
        int r = 0;
        while (r >= 0) {
                const uint8_t *d;
                uint32_t len;
                r = agent_req_next(q, &d, &len);
                if (r <= 0)
                        break;
                if (ret->len - start + len > max)
                        return -EMSGSIZE;
                r = buf_add(ret, d, len);
        }
        return r;
}

int agent_req_drain(struct agent_req *q)
{
        for (int i = 0; i < AGENT_DRAIN_FRAMES; i++) {
                const uint8_t *d;
                uint32_t len;
                int r = agent_req_next(q, &d, &len);
                if (r <= 0)
                        return r;
        }
        return -EPROTO;
}

int agent_resp_content_length(const struct sbx_resp_head *h, uint64_t *ret)
{
        const char *v = sbx_header_get(h->headers, h->n_headers, "Content-Length");
        *ret = UINT64_MAX;
        if (!v)
                return 0;
        char *end;
        errno = 0;
        unsigned long long l = strtoull(v, &end, 10);
        if (!*v || *end || v[0] == '-' || errno || l == UINT64_MAX)
                return -EPROTO;
        *ret = l;
        return 0;
}

int agent_req_call(const char *sandbox_dir, const struct sbx_req_head *head, const void *body,
                   size_t len, size_t max, const struct agent_req_opts *o, struct buf *ret_body,
                   char *ret_content_type, size_t content_type_size)
{
        _cleanup_agent_req_ struct agent_req *q = NULL;
        struct sbx_resp_head h = {};
        int r = agent_req_open(sandbox_dir, head, o, &q);
        if (r < 0)
                return r;
        /* -ECANCELED: the agent answered before the whole body; read that answer */
        r = agent_req_send(q, body, len);
        if (r >= 0 || r == -ECANCELED)
                r = agent_req_end(q);
        if (r < 0 && r != -ECANCELED)
                return r;
        r = agent_req_read_head(q, &h);
        if (r < 0)
                return r;
        int status = h.status;
        if (ret_content_type) {
                const char *ct = sbx_header_get(h.headers, h.n_headers, "Content-Type");
                snprintf(ret_content_type, content_type_size, "%s", ct ? ct : "");
        }
        sbx_resp_head_free(&h);
        r = ret_body ? agent_req_read_body(q, max, ret_body) : agent_req_drain(q);
        return r < 0 ? r : status;
}
