/* SPDX-License-Identifier: Apache-2.0 */
#include "serve/build-proxy.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "fd-util.h"
#include "policy/build-request.h"
#include "policy/proxy-parse.h"
#include "serve/fatal.h"
#include "log.h"
#include "macros.h"

/* ---- the proxy ---- */

struct build_egress {
        int lfd, stop;
        pthread_t thread;
        char **allow;
        size_t n_allow;
        pthread_mutex_t note_lock; /* note is cleared under it when the build goes */
        build_egress_note_fn note;
        void *userdata;
        unsigned active; /* __atomic: connections being served */
        unsigned refs;   /* __atomic: the owner's and one per connection; the last frees */
};

static void put(struct build_egress *e)
{
        if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) != 0)
                return;
        for (size_t i = 0; i < e->n_allow; i++)
                free(e->allow[i]);
        free(e->allow);
        pthread_mutex_destroy(&e->note_lock);
        free(e);
}

struct conn {
        struct build_egress *e;
        int fd;
};

static bool allowed(const struct build_egress *e, const char *host)
{
        for (size_t i = 0; i < e->n_allow; i++)
                if (strcasecmp(e->allow[i], host) == 0)
                        return true;
        return false;
}

static void egress_note(struct build_egress *e, const char *msg)
{
        pthread_mutex_lock(&e->note_lock);
        if (e->note)
                e->note(e->userdata, msg);
        pthread_mutex_unlock(&e->note_lock);
}

static void answer(int fd, const char *status, const char *msg)
{
        dprintf(fd,
                "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: "
                "close\r\n\r\n%s",
                status, strlen(msg), msg);
}

static void refuse(int fd, struct build_egress *e, const char *host)
{
        char msg[1024];
        size_t o = (size_t)snprintf(msg, sizeof(msg),
                                    "sbx build egress: %s is not reachable from template builds; "
                                    "builds reach only the package mirrors of the host's apt "
                                    "sources (",
                                    host);
        for (size_t i = 0; i < e->n_allow && o < sizeof(msg) - 80; i++)
                o += (size_t)snprintf(msg + o, sizeof(msg) - o, "%s%s", i ? ", " : "", e->allow[i]);
        snprintf(msg + o, sizeof(msg) - o, "%s)\n", e->n_allow ? "" : "none configured");
        answer(fd, "403 Forbidden", msg);
        egress_note(e, msg);
}

static int dial(const char *host, const char *port)
{
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
        if (getaddrinfo(host, port, &hints, &res) != 0)
                return -EHOSTUNREACH;
        int fd = -EHOSTUNREACH;
        for (struct addrinfo *a = res; a; a = a->ai_next) {
                fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
                if (fd < 0) {
                        fd = -errno;
                        continue;
                }
                struct timeval tv = {.tv_sec = EGRESS_CONNECT_MS / 1000};
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
                if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
                        break;
                int e = -errno;
                close(fd);
                fd = e;
        }
        freeaddrinfo(res);
        return fd;
}

static void unreachable(struct build_egress *e, int fd, const char *host, const char *port, int r)
{
        char msg[512];
        snprintf(msg, sizeof(msg), "sbx build egress: the mirror %s:%s cannot be reached: %s\n",
                 host, port, strerror(-r));
        answer(fd, "502 Bad Gateway", msg);
        egress_note(e, msg);
}

/* Both ways until both sides are done or EGRESS_IDLE_MS pass without a byte. */
static void splice_both(int a, int b)
{
        char buf[65536];
        struct pollfd p[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
        bool open_a = true, open_b = true;
        while (open_a || open_b) {
                p[0].fd = open_a ? a : -1;
                p[1].fd = open_b ? b : -1;
                int n = poll(p, 2, EGRESS_IDLE_MS);
                if (n <= 0) {
                        if (n < 0 && errno == EINTR)
                                continue;
                        return;
                }
                for (int i = 0; i < 2; i++) {
                        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        int from = i ? b : a, to = i ? a : b;
                        ssize_t k = read(from, buf, sizeof(buf));
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0) {
                                if (i)
                                        open_b = false;
                                else
                                        open_a = false;
                                shutdown(to, SHUT_WR);
                                if (k < 0)
                                        return;
                                continue;
                        }
                        if (write_full(to, buf, (size_t)k) < 0)
                                return;
                }
        }
}

/* The head of the client's request: ret_len bytes read, the head's length returned. */
static int read_head(int fd, char *buf, size_t *ret_len)
{
        size_t len = 0;
        for (;;) {
                ssize_t k = read(fd, buf + len, BUILD_REQUEST_HEAD_MAX - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -EPIPE;
                len += (size_t)k;
                int h = build_request_head_len(buf, len);
                if (h != 0) {
                        *ret_len = len;
                        return h;
                }
        }
}

/* A request the proxy forwards: to an allowed host, on port 80 (plain) or 443 (CONNECT), its
 * Host header (when it has one) naming that host. 0, or the refusal already answered and
 * noted. */
static int check(struct build_egress *e, int fd, const struct build_request *rq)
{
        const char *port = rq->kind == BUILD_REQUEST_PLAIN ? "80" : "443";
        if (!allowed(e, rq->host) || strcmp(rq->port, port) != 0) {
                refuse(fd, e, rq->host);
                return -EPERM;
        }
        if (rq->kind == BUILD_REQUEST_PLAIN && rq->host_header[0] &&
            strcasecmp(rq->host_header, rq->host) != 0) {
                char msg[700];
                snprintf(msg, sizeof(msg),
                         "sbx build egress: a request for %s names another host (%s) in its Host "
                         "header: refused (a front end serving several sites would route it "
                         "there)\n",
                         rq->host, rq->host_header);
                answer(fd, "403 Forbidden", msg);
                egress_note(e, msg);
                return -EPERM;
        }
        return 0;
}

/* What the client sent after its first request on the connection (pipelined): never forwarded
 * (the proxy serves one request per connection, the response says "Connection: close", the
 * client sends the rest again on new connections, each checked), but a request there the proxy
 * would refuse is noted in the build's log now. */
static void note_pipelined(struct build_egress *e, const char *buf, size_t len)
{
        while (len > 0) {
                struct build_request rq;
                int h = build_request_head_len(buf, len);
                if (h <= 0 || build_request_parse(buf, (size_t)h, &rq) < 0)
                        return;
                bool ok = allowed(e, rq.host) && rq.kind == BUILD_REQUEST_PLAIN &&
                          strcmp(rq.port, "80") == 0 &&
                          (!rq.host_header[0] || !strcasecmp(rq.host_header, rq.host));
                if (!ok) {
                        char msg[700];
                        snprintf(msg, sizeof(msg),
                                 "sbx build egress: a request pipelined on one connection, for %s "
                                 "(Host %s), refused: not forwarded\n",
                                 rq.host, rq.host_header[0] ? rq.host_header : "none");
                        egress_note(e, msg);
                }
                size_t used = (size_t)h + (size_t)MIN(rq.body_len, (uint64_t)(len - (size_t)h));
                buf += used;
                len -= used;
        }
}

/* n bytes of the request's body that had not arrived with its head, client to mirror. */
static int copy_body(int fd, int up, uint64_t n)
{
        char chunk[16384];
        while (n > 0) {
                ssize_t k = read(fd, chunk, (size_t)MIN(n, (uint64_t)sizeof(chunk)));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -EPIPE;
                if (write_full(up, chunk, (size_t)k) < 0)
                        return -EPIPE;
                n -= (uint64_t)k;
        }
        return 0;
}

/* The mirror's response to the client: its head with "Connection: close", then the rest as it
 * comes, until the mirror closes. */
static void relay_response(int fd, int up)
{
        _cleanup_free_ char *buf = malloc(BUILD_REQUEST_HEAD_MAX);
        _cleanup_free_ char *out = malloc(BUILD_REQUEST_HEAD_MAX + 64);
        size_t len = 0;
        int h = 0;
        while (buf && out && h == 0) {
                ssize_t k = read(up, buf + len, BUILD_REQUEST_HEAD_MAX - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return;
                len += (size_t)k;
                h = build_request_head_len(buf, len);
        }
        int n = h > 0 ? build_response_rewrite(buf, (size_t)h, out, BUILD_REQUEST_HEAD_MAX + 64)
                      : -EINVAL;
        if (n < 0) {
                answer(fd, "502 Bad Gateway",
                       "sbx build egress: the mirror's answer is not HTTP/1\n");
                return;
        }
        if (write_full(fd, out, (size_t)n) < 0 || write_full(fd, buf + h, len - (size_t)h) < 0)
                return;
        for (;;) {
                ssize_t k = read(up, buf, BUILD_REQUEST_HEAD_MAX);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0 || write_full(fd, buf, (size_t)k) < 0)
                        return;
        }
}

/* A plain request "METHOD http://host[:port]/path VERSION": sent to the mirror in origin form
 * with the mirror's own Host (build_request_rewrite()), then its body (Content-Length) and
 * nothing else of the client's; the response back. */
static void forward_plain(struct build_egress *e, int fd, const char *buf, size_t len,
                          const struct build_request *rq)
{
        if (check(e, fd, rq) < 0)
                return;
        _cleanup_close_ int up = dial(rq->host, rq->port);
        if (up < 0) {
                unreachable(e, fd, rq->host, rq->port, up);
                return;
        }
        struct timeval tv = {.tv_sec = EGRESS_IDLE_MS / 1000};
        (void)setsockopt(up, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        _cleanup_free_ char *out = malloc(BUILD_REQUEST_HEAD_MAX + 64);
        int n = out ? build_request_rewrite(buf, rq, out, BUILD_REQUEST_HEAD_MAX + 64) : -ENOMEM;
        size_t after = len - rq->head_len;
        size_t have = (size_t)MIN(rq->body_len, (uint64_t)after);
        if (n < 0 || write_full(up, out, (size_t)n) < 0 ||
            write_full(up, buf + rq->head_len, have) < 0 ||
            copy_body(fd, up, rq->body_len - have) < 0)
                return;
        note_pipelined(e, buf + rq->head_len + have, after - have);
        relay_response(fd, up);
}

/* The server name the client's TLS asks for, read from the ClientHello it sends first (into
 * buf, *len bytes read): 1, 0 when it is not a ClientHello with a name. */
static int client_hello(int fd, char *buf, size_t *len, char name[static 256])
{
        for (;;) {
                int r = proxy_tls_sni((const unsigned char *)buf, *len, name);
                if (r != 0)
                        return r > 0;
                if (*len >= BUILD_REQUEST_HEAD_MAX)
                        return 0;
                ssize_t k = read(fd, buf + *len, BUILD_REQUEST_HEAD_MAX - *len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return 0;
                *len += (size_t)k;
        }
}

/* CONNECT host:443: a tunnel to the mirror, for TLS that asks for the mirror's name (its
 * ClientHello's server name): any other is refused before anything reaches the mirror. */
static void forward_connect(struct build_egress *e, int fd, const char *buf, size_t len,
                            const struct build_request *rq)
{
        if (check(e, fd, rq) < 0)
                return;
        _cleanup_close_ int up = dial(rq->host, "443");
        if (up < 0) {
                unreachable(e, fd, rq->host, "443", up);
                return;
        }
        const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        _cleanup_free_ char *hello = malloc(BUILD_REQUEST_HEAD_MAX);
        size_t hl = MIN(len - rq->head_len, (size_t)BUILD_REQUEST_HEAD_MAX);
        char name[256];
        if (!hello || write_full(fd, ok, sizeof(ok) - 1) < 0)
                return;
        memcpy(hello, buf + rq->head_len, hl);
        if (!client_hello(fd, hello, &hl, name) || strcasecmp(name, rq->host) != 0) {
                char msg[700];
                snprintf(msg, sizeof(msg),
                         "sbx build egress: the TLS connection through CONNECT %s:443 asks for "
                         "%s: refused (only the mirror's own name)\n",
                         rq->host, hl ? name : "no name");
                egress_note(e, msg);
                return;
        }
        if (write_full(up, hello, hl) < 0)
                return;
        splice_both(fd, up);
}

static void *conn_main(void *arg)
{
        struct conn *c = arg;
        _cleanup_close_ int fd = c->fd;
        struct build_egress *e = c->e;
        free(c);
        _cleanup_free_ char *buf = malloc(BUILD_REQUEST_HEAD_MAX);
        size_t len = 0;
        struct build_request rq;
        struct timeval tv = {.tv_sec = 30};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        int r = buf ? read_head(fd, buf, &len) : -ENOMEM;
        if (r == -E2BIG)
                answer(fd, "431 Request Header Fields Too Large", "request head too large\n");
        if (r >= 0) {
                tv.tv_sec = 0;
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                r = build_request_parse(buf, (size_t)r, &rq);
                if (r == -EINVAL)
                        answer(fd, "400 Bad Request", "not an HTTP proxy request\n");
                else if (r == -ENOTSUP)
                        answer(fd, "501 Not Implemented",
                               "sbx build egress: a chunked request body is not proxied\n");
                else if (r < 0)
                        answer(fd, "400 Bad Request",
                               "sbx build egress: a proxy request names its URL in full\n");
                else if (rq.kind == BUILD_REQUEST_CONNECT)
                        forward_connect(e, fd, buf, len, &rq);
                else
                        forward_plain(e, fd, buf, len, &rq);
        }
        __atomic_sub_fetch(&e->active, 1, __ATOMIC_RELAXED);
        put(e);
        return NULL;
}

static void *accept_main(void *arg)
{
        struct build_egress *e = arg;
        struct pollfd p[2] = {{.fd = e->lfd, .events = POLLIN}, {.fd = e->stop, .events = POLLIN}};
        for (;;) {
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        egress_serve_fatal("polling", -errno);
                if (p[1].revents)
                        break;
                if (!(p[0].revents & POLLIN))
                        continue;
                int c = accept4(e->lfd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0)
                        continue;
                struct conn *cn = malloc(sizeof(*cn));
                pthread_t t;
                if (!cn ||
                    __atomic_add_fetch(&e->active, 1, __ATOMIC_RELAXED) > EGRESS_MAX_CONNECTIONS) {
                        if (cn)
                                __atomic_sub_fetch(&e->active, 1, __ATOMIC_RELAXED);
                        free(cn);
                        close(c);
                        continue;
                }
                *cn = (struct conn){.e = e, .fd = c};
                __atomic_add_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
                if (pthread_create(&t, NULL, conn_main, cn) != 0) {
                        __atomic_sub_fetch(&e->active, 1, __ATOMIC_RELAXED);
                        __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
                        free(cn);
                        close(c);
                        continue;
                }
                pthread_detach(t);
        }
        return NULL;
}

int build_egress_start(int lfd, char *const *allow, size_t n_allow, build_egress_note_fn note,
                       void *userdata, struct build_egress **ret)
{
        struct build_egress *e = calloc(1, sizeof(*e));
        if (!e) {
                safe_close(lfd);
                return -ENOMEM;
        }
        e->refs = 1;
        e->allow = calloc(n_allow + 1, sizeof(char *));
        for (size_t i = 0; e->allow && i < n_allow; i++)
                if ((e->allow[i] = strdup(allow[i])))
                        e->n_allow++;
        pthread_mutex_init(&e->note_lock, NULL);
        e->note = note;
        e->userdata = userdata;
        e->lfd = lfd;
        e->stop = eventfd(0, EFD_CLOEXEC);
        int r = !e->allow || e->n_allow < n_allow ? -ENOMEM : e->stop < 0 ? -errno : 0;
        if (r >= 0)
                r = -pthread_create(&e->thread, NULL, accept_main, e);
        if (r < 0) {
                safe_close(e->lfd);
                safe_close(e->stop);
                put(e);
                return r;
        }
        *ret = e;
        return 0;
}

void build_egress_stop(struct build_egress *e)
{
        if (!e)
                return;
        uint64_t one = 1;
        (void)!write(e->stop, &one, sizeof(one));
        pthread_join(e->thread, NULL);
        pthread_mutex_lock(&e->note_lock);
        e->note = NULL;
        pthread_mutex_unlock(&e->note_lock);
        safe_close(e->lfd);
        safe_close(e->stop);
        put(e); /* connections still running hold their own references */
}
