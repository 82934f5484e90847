/* SPDX-License-Identifier: Apache-2.0 */
#include "port/relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "buf.h"
#include "fd-util.h"
#include "frame.h"
#include "macros.h"
#include "port/http1.h"

bool agent_port_is_user(uint16_t port)
{
        return port != SBX_PORT_INTERNAL && port != SBX_PORT_ENVD && port != SBX_PORT_CODE;
}

struct relay {
        struct agent_request *r;
        int sock;
        bool upgrade; /* the request asked for an upgrade */
        enum port_req_body req_body;
        bool req_done;    /* END read from sbxd */
        bool server_gone; /* the server stopped reading: request bytes are dropped */
        bool wr_shut;     /* SHUT_WR sent to the server */
        struct buf out;   /* request bytes for the server */
        struct buf head;  /* the response head while it is read */
        bool head_done;   /* RESP_HEAD sent */
        struct port_resp resp;
        struct port_chunked ch;
        uint64_t left; /* PORT_RESP_LENGTH: bytes still expected */
        uint8_t *in;   /* PORT_IO_CHUNK */
};

/* 127.0.0.1, else ::1; a connect that hangs (a full backlog) gives up after the timeout. */
static int port_connect(uint16_t port, int *ret_fd)
{
        struct sockaddr_in a4 = {.sin_family = AF_INET,
                                 .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        struct sockaddr_in6 a6 = {
            .sin6_family = AF_INET6, .sin6_port = htons(port), .sin6_addr = IN6ADDR_LOOPBACK_INIT};
        const struct {
                const struct sockaddr *a;
                socklen_t len;
        } addrs[] = {{(const struct sockaddr *)&a4, sizeof(a4)},
                     {(const struct sockaddr *)&a6, sizeof(a6)}};
        struct timeval tv = {.tv_sec = PORT_CONNECT_TIMEOUT_S};
        int last = -ECONNREFUSED;

        for (size_t i = 0; i < ELEMENTSOF(addrs); i++) {
                _cleanup_close_ int fd =
                    socket(addrs[i].a->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        last = -errno;
                        continue;
                }
                (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
                if (connect(fd, addrs[i].a, addrs[i].len) == 0) {
                        *ret_fd = TAKE_FD(fd);
                        return 0;
                }
                last = -errno;
        }
        return last;
}

static int reply_not_open(struct agent_request *r)
{
        const struct sbx_header h = {PORT_ERROR_HEADER, PORT_ERROR_NOT_OPEN};
        int e = agent_respond_head_list(r, 502, &h, 1);
        return e < 0 ? e : agent_respond_end(r);
}

/* ---- the request side: sbxd → server ---- */

static int from_sbxd(struct relay *rl)
{
        const uint8_t *d;
        size_t n;
        int e = agent_request_read_body(rl->r, &d, &n);
        if (e < 0)
                return e; /* sbxd went away: the exchange is aborted */
        if (e == 0) {
                rl->req_done = true;
                if (rl->req_body == PORT_REQ_CHUNKED && !rl->server_gone)
                        return buf_adds(&rl->out, "0\r\n\r\n");
                return 0;
        }
        if (rl->server_gone)
                return 0;
        if (rl->head_done && rl->resp.status == 101)
                return buf_add(&rl->out, d, n);
        switch (rl->req_body) {
        case PORT_REQ_NONE:
                return 0; /* before a 101: nothing to send yet */
        case PORT_REQ_LENGTH:
                return buf_add(&rl->out, d, n);
        case PORT_REQ_CHUNKED:
                if (buf_printf(&rl->out, "%zx\r\n", n) < 0 || buf_add(&rl->out, d, n) < 0 ||
                    buf_adds(&rl->out, "\r\n") < 0)
                        return -ENOMEM;
                return 0;
        }
        return 0;
}

static void flush(struct relay *rl)
{
        while (rl->out.len > 0) {
                ssize_t k = send(rl->sock, rl->out.p, rl->out.len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                if (k <= 0) {
                        /* the server closed its side: its answer may still come */
                        rl->server_gone = true;
                        rl->out.len = 0;
                        return;
                }
                buf_consume(&rl->out, (size_t)k);
        }
        bool upgraded = rl->head_done && rl->resp.status == 101;
        if (rl->req_done && upgraded && !rl->wr_shut) {
                (void)shutdown(rl->sock, SHUT_WR);
                rl->wr_shut = true;
        }
}

/* ---- the response side: server → sbxd ---- */

static int send_head(struct relay *rl)
{
        struct sbx_header hs[PORT_MAX_RESP_HEADERS];
        size_t n = 0;
        for (size_t i = 0; i < rl->resp.n_headers; i++) {
                const char *name = rl->resp.headers[i].name;
                if (port_resp_header_forwarded(&rl->resp, name) &&
                    strcasecmp(name, PORT_ERROR_HEADER) != 0)
                        hs[n++] = rl->resp.headers[i];
        }
        int e = agent_respond_head_list(rl->r, rl->resp.status, hs, n);
        if (e < 0)
                return e;
        rl->head_done = true;
        rl->left = rl->resp.length;
        return 0;
}

/* Body bytes of the answer: 1 once the body is complete (END sent), 0 for more. */
static int body_bytes(struct relay *rl, uint8_t *d, size_t n)
{
        size_t k = n;
        int done = 0, e = 0;
        switch (rl->resp.body) {
        case PORT_RESP_NONE:
                k = 0;
                done = 1;
                break;
        case PORT_RESP_LENGTH:
                k = (size_t)MIN((uint64_t)n, rl->left);
                rl->left -= k;
                done = rl->left == 0;
                break;
        case PORT_RESP_CHUNKED:
                done = port_chunked_decode(&rl->ch, d, n, &k);
                if (done < 0)
                        return -EPROTO; /* aborted: sbxd sees no END */
                break;
        case PORT_RESP_CLOSE:
                break;
        }
        if (k > 0)
                e = agent_respond_data(rl->r, d, k);
        if (e < 0)
                return e;
        if (!done)
                return 0;
        e = agent_respond_end(rl->r);
        return e < 0 ? e : 1;
}

/* Bytes while the head is read: 1 when the exchange is over, 0 for more. */
static int head_bytes(struct relay *rl, const uint8_t *d, size_t n)
{
        if (rl->head.len + n > PORT_MAX_RESP_HEAD)
                return reply_not_open(rl->r) < 0 ? -EIO : 1;
        if (buf_add(&rl->head, d, n) < 0)
                return -ENOMEM;
        for (;;) {
                size_t end = port_resp_head_end(rl->head.p, rl->head.len);
                if (end == 0)
                        return 0;
                bool is_head = strcasecmp(rl->r->head.method, "HEAD") == 0;
                if (port_resp_parse(rl->head.p, end, is_head, &rl->resp) < 0)
                        return reply_not_open(rl->r) < 0 ? -EIO : 1;
                if (rl->resp.status < 200 && rl->resp.status != 101) {
                        buf_consume(&rl->head, end); /* 100 Continue, 103: not passed on */
                        continue;
                }
                if (rl->resp.status == 101 && !rl->upgrade)
                        return reply_not_open(rl->r) < 0 ? -EIO : 1;
                /* the parsed strings live in head.p until the RESP_HEAD is out */
                int e = send_head(rl);
                if (e < 0)
                        return e;
                size_t rest = rl->head.len - end;
                memcpy(rl->in, rl->head.p + end, rest); /* rest < PORT_IO_CHUNK: read size */
                buf_done(&rl->head);
                if (rl->resp.body == PORT_RESP_NONE || rest > 0)
                        return body_bytes(rl, rl->in, rest);
                return 0;
        }
}

static int from_server(struct relay *rl)
{
        ssize_t n = recv(rl->sock, rl->in, PORT_IO_CHUNK, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                return 0;
        if (n <= 0) {
                if (!rl->head_done)
                        return reply_not_open(rl->r) < 0 ? -EIO : 1;
                if (rl->resp.body != PORT_RESP_CLOSE)
                        return -EPIPE; /* cut short: aborted, sbxd sees no END */
                int e = agent_respond_end(rl->r);
                return e < 0 ? e : 1;
        }
        if (!rl->head_done)
                return head_bytes(rl, rl->in, (size_t)n);
        return body_bytes(rl, rl->in, (size_t)n);
}

static int relay_run(struct relay *rl)
{
        for (;;) {
                struct pollfd p[2] = {
                    {.fd = rl->r->fd, .events = !rl->req_done && rl->out.len == 0 ? POLLIN : 0},
                    {.fd = rl->sock, .events = POLLIN | (rl->out.len > 0 ? POLLOUT : 0)},
                };
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (p[0].revents & POLLIN) {
                        int e = from_sbxd(rl);
                        if (e < 0)
                                return e;
                } else if (p[0].revents & (POLLHUP | POLLERR))
                        return -ECONNRESET; /* sbxd hung up (its client left) */
                if (rl->out.len > 0 || rl->req_done)
                        flush(rl);
                if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
                        int e = from_server(rl);
                        if (e != 0)
                                return e < 0 ? e : rl->r->status;
                }
        }
}

int agent_port_handle(struct agent_request *r)
{
        struct relay rl = {.r = r, .sock = -EBADF};
        const char *up = agent_request_header(r, "Upgrade");
        int e;

        rl.upgrade = up && up[0];
        e = port_connect(r->head.port, &rl.sock);
        if (e < 0) {
                /* refused, or nothing to connect to: E2B's "port is not open" (sbxd) */
                r->body_done = true; /* not read: sbxd stops sending once this answer is in */
                return reply_not_open(r);
        }
        e = port_req_head_build(&r->head, rl.upgrade, &rl.out, &rl.req_body);
        if (e < 0) {
                buf_done(&rl.out);
                safe_close(rl.sock);
                r->body_done = true;
                return agent_respond_rest_error(r, 400, "request head cannot be sent to port %u",
                                                (unsigned)r->head.port);
        }
        rl.in = malloc(PORT_IO_CHUNK);
        if (!rl.in)
                e = -ENOMEM;
        else
                e = relay_run(&rl);
        free(rl.in);
        buf_done(&rl.out);
        buf_done(&rl.head);
        safe_close(rl.sock);
        return e;
}
