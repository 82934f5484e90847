/* SPDX-License-Identifier: Apache-2.0 */
#include "interp/code-inside.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/server.h"
#include "fd-util.h"
#include "frame.h"
#include "log.h"
#include "macros.h"
#include "thread-util.h"

#define INSIDE_THREAD_STACK (256u * 1024u)

static atomic_uint inside_connections;

/* A whole request head (through the blank line) into buf; its length, or -errno (-E2BIG past
 * the bound, -ECONNRESET at end of file). What follows it (the body's start) stays in buf
 * after the head: *ret_have is all that was read. */
static int read_head(int fd, char *buf, size_t size, size_t *ret_have)
{
        size_t have = 0;
        for (;;) {
                char *end = have >= 4 ? memmem(buf, have, "\r\n\r\n", 4) : NULL;
                if (end) {
                        *ret_have = have;
                        return (int)(end - buf + 4);
                }
                if (have == size)
                        return -E2BIG;
                ssize_t n = read(fd, buf + have, size - have);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -ECONNRESET;
                have += (size_t)n;
        }
}

/* Headers that belong to one hop (the client's connection to this server), never passed on. */
static bool hop_header(const char *name)
{
        static const char *const hop[] = {"Connection", "Keep-Alive", "Transfer-Encoding", "TE",
                                          "Trailer",    "Upgrade",    "Proxy-Connection"};
        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (strcasecmp(name, hop[i]) == 0)
                        return true;
        return false;
}

static int reply_simple(int fd, int status, const char *reason, const char *msg)
{
        char buf[512];
        int n = snprintf(buf, sizeof(buf),
                         "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                         status, reason, strlen(msg), msg);
        return write_full(fd, buf, (size_t)n);
}

/* The request line and headers of head (NUL-terminated in place) into h, pointing into head.
 * The target's path and query are split as sbxd splits them (the path as sent). */
static int parse_head(char *head, struct sbx_req_head *h, struct sbx_header *hdrs, size_t max_hdrs,
                      long long *ret_length, bool *ret_chunked)
{
        char *save = NULL, *line = strtok_r(head, "\r\n", &save);
        char *sp1 = line ? strchr(line, ' ') : NULL, *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
        if (!sp2 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 || sp1[1] != '/')
                return -EINVAL;
        *sp1 = *sp2 = 0;
        h->method = line;
        h->path = sp1 + 1;
        char *q = strchr(sp1 + 1, '?');
        h->query = q ? q + 1 : "";
        if (q)
                *q = 0;
        *ret_length = 0;
        *ret_chunked = false;
        while ((line = strtok_r(NULL, "\r\n", &save))) {
                char *colon = strchr(line, ':');
                if (!colon || colon == line)
                        return -EINVAL;
                *colon = 0;
                char *v = colon + 1;
                v += strspn(v, " \t");
                for (char *e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t');)
                        *--e = 0;
                if (strcasecmp(line, "Content-Length") == 0) {
                        char *end;
                        errno = 0;
                        *ret_length = strtoll(v, &end, 10);
                        if (errno || *end || *ret_length < 0)
                                return -EINVAL;
                }
                if (strcasecmp(line, "Transfer-Encoding") == 0)
                        *ret_chunked = true;
                if (hop_header(line))
                        continue;
                if (h->n_headers == max_hdrs)
                        return -E2BIG;
                hdrs[h->n_headers++] = (struct sbx_header){.name = line, .value = v};
        }
        h->port = SBX_PORT_CODE;
        h->headers = hdrs;
        return 0;
}

/* The body: what came with the head, then the rest of Content-Length, as DATA frames. */
static int send_body(int in, int out, const char *first, size_t first_len, long long length)
{
        char *buf = malloc(SBX_FRAME_MAX_PAYLOAD);
        int r = 0;
        if (!buf)
                return -ENOMEM;
        if ((long long)first_len > length)
                first_len = (size_t)length;
        if (first_len > 0)
                r = sbx_frame_write(out, SBX_FRAME_DATA, first, first_len);
        length -= (long long)first_len;
        while (r >= 0 && length > 0) {
                size_t want = (size_t)MIN((long long)SBX_FRAME_MAX_PAYLOAD, length);
                ssize_t n = read(in, buf, want);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : -ECONNRESET;
                        break;
                }
                r = sbx_frame_write(out, SBX_FRAME_DATA, buf, (size_t)n);
                length -= n;
        }
        free(buf);
        return r < 0 ? r : sbx_frame_write(out, SBX_FRAME_END, NULL, 0);
}

/* The agent's answer (frames on ch) to the client as HTTP/1.1: chunked, then closed. */
static int relay_answer(int ch, int fd, bool head_only)
{
        uint8_t *buf = malloc(SBX_FRAME_MAX_PAYLOAD);
        uint8_t type;
        uint32_t len;
        int r = buf ? sbx_frame_read(ch, &type, buf, &len) : -ENOMEM;
        struct sbx_resp_head rh = {};
        if (r >= 0 && type != SBX_FRAME_RESP_HEAD)
                r = -EPROTO;
        if (r >= 0)
                r = sbx_resp_head_decode(buf, len, &rh);
        if (r < 0) {
                free(buf);
                return r;
        }
        bool no_body = head_only || rh.status == 204 || rh.status == 304;
        char line[SBX_HEAD_MAX_STRING + 64];
        int n = snprintf(line, sizeof(line), "HTTP/1.1 %u %s\r\n", rh.status,
                         rh.status < 300 ? "OK" : "Error");
        r = write_full(fd, line, (size_t)n);
        for (size_t i = 0; r >= 0 && i < rh.n_headers; i++) {
                if (hop_header(rh.headers[i].name) ||
                    strcasecmp(rh.headers[i].name, "Content-Length") == 0)
                        continue;
                n = snprintf(line, sizeof(line), "%s: %s\r\n", rh.headers[i].name,
                             rh.headers[i].value);
                r = write_full(fd, line, (size_t)MIN((size_t)n, sizeof(line) - 1));
        }
        sbx_resp_head_free(&rh);
        if (r >= 0)
                r = write_full(fd,
                               no_body ? "Connection: close\r\n\r\n"
                                       : "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                               no_body ? 21 : 49);
        while (r >= 0) {
                r = sbx_frame_read(ch, &type, buf, &len);
                if (r < 0 || type == SBX_FRAME_END)
                        break;
                if (type != SBX_FRAME_DATA || no_body || len == 0)
                        continue;
                n = snprintf(line, sizeof(line), "%x\r\n", len);
                r = write_full(fd, line, (size_t)n);
                if (r >= 0)
                        r = write_full(fd, buf, len);
                if (r >= 0)
                        r = write_full(fd, "\r\n", 2);
        }
        if (r >= 0 && !no_body)
                r = write_full(fd, "0\r\n\r\n", 5);
        free(buf);
        return r;
}

/* One connection: one request, bridged into the agent's own channel (a socketpair served by
 * core/server.h as if sbxd had sent it), so every route of port 49999 answers exactly as it
 * does from outside. */
static void serve_one(int fd)
{
        char *head = malloc(SBX_FRAME_MAX_HEAD + 1);
        struct sbx_header *hdrs = calloc(SBX_HEAD_MAX_HEADERS, sizeof(*hdrs));
        struct sbx_req_head h = {};
        uint8_t *enc = NULL;
        size_t have = 0, enc_len;
        long long length;
        bool chunked;
        int sv[2] = {-1, -1};
        struct timeval tv = {.tv_sec = CODE_INSIDE_HEAD_TIMEOUT_S};

        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        int hl = head && hdrs ? read_head(fd, head, SBX_FRAME_MAX_HEAD, &have) : -ENOMEM;
        if (hl == -E2BIG)
                (void)reply_simple(fd, 431, "Request Header Fields Too Large", "head too large\n");
        if (hl < 0)
                goto out;
        head[hl - 2] = 0; /* ends after the last header's CRLF */
        if (parse_head(head, &h, hdrs, SBX_HEAD_MAX_HEADERS, &length, &chunked) < 0) {
                (void)reply_simple(fd, 400, "Bad Request", "malformed request\n");
                goto out;
        }
        if (chunked) {
                (void)reply_simple(fd, 411, "Length Required", "send a Content-Length\n");
                goto out;
        }
        tv.tv_sec = 0;
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
            sbx_req_head_encode(&h, &enc, &enc_len) < 0 ||
            sbx_frame_write(sv[0], SBX_FRAME_REQ_HEAD, enc, enc_len) < 0)
                goto out;
        agent_server_spawn(TAKE_FD(sv[1]));
        if (send_body(fd, sv[0], head + hl, have - (size_t)hl, length) < 0)
                goto out;
        (void)relay_answer(sv[0], fd, strcmp(h.method, "HEAD") == 0);
out:
        free(enc);
        free(hdrs);
        free(head);
        safe_close(sv[0]);
        safe_close(sv[1]);
}

static void *conn_main(void *arg)
{
        int fd = (int)(intptr_t)arg;
        serve_one(fd);
        safe_close(fd);
        atomic_fetch_sub(&inside_connections, 1);
        return NULL;
}

static int listen_on(int family)
{
        struct sockaddr_storage ss = {};
        socklen_t sl;
        if (family == AF_INET) {
                struct sockaddr_in *a = (struct sockaddr_in *)&ss;
                a->sin_family = AF_INET;
                a->sin_port = htons(SBX_PORT_CODE);
                a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                sl = sizeof(*a);
        } else {
                struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
                a->sin6_family = AF_INET6;
                a->sin6_port = htons(SBX_PORT_CODE);
                a->sin6_addr = in6addr_loopback;
                sl = sizeof(*a);
        }
        int one = 1, fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (family == AF_INET6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 64) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        return fd;
}

static void *accept_main(void *arg)
{
        struct pollfd *pfd = arg;
        for (;;) {
                if (poll(pfd, 2, -1) < 0)
                        continue;
                for (int i = 0; i < 2; i++) {
                        if (pfd[i].fd < 0 || !(pfd[i].revents & POLLIN))
                                continue;
                        int c = accept4(pfd[i].fd, NULL, NULL, SOCK_CLOEXEC);
                        if (c < 0)
                                continue;
                        if (atomic_fetch_add(&inside_connections, 1) >=
                                CODE_INSIDE_MAX_CONNECTIONS ||
                            thread_start_detached(conn_main, (void *)(intptr_t)c,
                                                  INSIDE_THREAD_STACK) < 0) {
                                (void)reply_simple(c, 503, "Service Unavailable", "busy\n");
                                close(c);
                                atomic_fetch_sub(&inside_connections, 1);
                        }
                }
        }
        return NULL;
}

void code_inside_start(void)
{
        static struct pollfd pfd[2];
        int a = listen_on(AF_INET), b = listen_on(AF_INET6);
        if (a < 0 && b < 0) {
                log_warning_errno(a, "the code interpreter inside the sandbox (port %d): %m",
                                  SBX_PORT_CODE);
                return;
        }
        pfd[0] = (struct pollfd){.fd = a < 0 ? -1 : a, .events = POLLIN};
        pfd[1] = (struct pollfd){.fd = b < 0 ? -1 : b, .events = POLLIN};
        if (thread_start_detached(accept_main, pfd, INSIDE_THREAD_STACK) < 0) {
                safe_close(a);
                safe_close(b);
        }
}
