/* SPDX-License-Identifier: Apache-2.0 */
#include "channel/relay.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"
#include "core/stats.h"

int relay_client_fd(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        return ci ? ci->connect_fd : -1;
}

int relay_wait_agent(int fd, int client_fd, const volatile int *stop)
{
        for (;;) {
                struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                                      {.fd = client_fd, .events = POLLRDHUP}};
                int n = poll(p, client_fd >= 0 ? 2 : 1, 1000);
                if (n < 0 && errno != EINTR)
                        return -errno;
                if (stop && __atomic_load_n(stop, __ATOMIC_RELAXED))
                        return -ECONNABORTED;
                if (n <= 0)
                        continue;
                if (p[0].revents)
                        return 0;
                if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
                        return -ECONNABORTED;
        }
}

int relay_upload(int fd, const char *data, size_t len, int timeout_ms, bool count)
{
        while (len > 0) {
                struct pollfd pf = {.fd = fd, .events = POLLIN | POLLOUT};
                if (poll(&pf, 1, timeout_ms) <= 0 || (pf.revents & POLLIN))
                        return -ECANCELED;
                size_t k = MIN(len, (size_t)SBX_FRAME_MAX_PAYLOAD);
                int r = sbx_frame_write(fd, SBX_FRAME_DATA, data, k);
                if (r < 0)
                        return r;
                if (count)
                        stats_count_proxy_bytes(k, 0);
                data += k;
                len -= k;
        }
        return 0;
}

int relay_stream_new(int *fd, int client_fd, bool count, const volatile int *stop,
                     struct relay_stream **ret)
{
        struct relay_stream *st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        st->buf = malloc(SBX_FRAME_MAX_PAYLOAD);
        if (!st->buf) {
                free(st);
                return -ENOMEM;
        }
        st->client_fd = client_fd;
        st->count_proxy_bytes = count;
        st->stop = stop;
        st->fd = TAKE_FD(*fd);
        *ret = st;
        return 0;
}

void relay_stream_free(void *cls)
{
        struct relay_stream *st = cls;
        if (!st)
                return;
        safe_close(st->fd);
        free(st->buf);
        free(st);
}

int relay_read_head(struct relay_stream *st, struct sbx_resp_head *ret)
{
        uint8_t type;
        uint32_t len;
        int r = relay_wait_agent(st->fd, st->client_fd, st->stop);
        if (r >= 0)
                r = sbx_frame_read(st->fd, &type, st->buf, &len);
        if (r >= 0 && type != SBX_FRAME_RESP_HEAD)
                r = -EPROTO;
        if (r < 0)
                return r;
        return sbx_resp_head_decode(st->buf, len, ret);
}

ssize_t relay_stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
        struct relay_stream *st = cls;
        for (;;) {
                if (st->off < st->len) {
                        size_t k = MIN(max, (size_t)(st->len - st->off));
                        memcpy(out, st->buf + st->off, k);
                        st->off += (uint32_t)k;
                        return (ssize_t)k;
                }
                if (relay_wait_agent(st->fd, st->client_fd, st->stop) < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                uint32_t len;
                int r = sbx_frame_read_body(st->fd, st->buf, &len);
                if (r < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                if (r == 0) {
                        if (st->expected != MHD_SIZE_UNKNOWN && st->sent != st->expected)
                                return MHD_CONTENT_READER_END_WITH_ERROR;
                        return MHD_CONTENT_READER_END_OF_STREAM;
                }
                st->sent += len;
                if (st->count_proxy_bytes)
                        stats_count_proxy_bytes(0, len);
                if (st->expected != MHD_SIZE_UNKNOWN && st->sent > st->expected)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                st->len = len;
                st->off = 0;
        }
}

int relay_content_length(const struct sbx_resp_head *h, uint64_t *ret)
{
        const char *v = sbx_header_get(h->headers, h->n_headers, "Content-Length");
        *ret = MHD_SIZE_UNKNOWN;
        if (!v)
                return 0;
        char *end;
        unsigned long long l = strtoull(v, &end, 10);
        if (!*v || *end || v[0] == '-' || l == MHD_SIZE_UNKNOWN)
                return -EPROTO;
        *ret = l;
        return 0;
}
