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

/* The head of the client's request: ret_len bytes read, head_len of them the head. */
static int read_head(int fd, char *buf, size_t *ret_len, size_t *ret_head)
{
        size_t len = 0;
        while (len < EGRESS_MAX_HEAD) {
                ssize_t k = read(fd, buf + len, EGRESS_MAX_HEAD - len);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -EPIPE;
                len += (size_t)k;
                buf[len] = 0;
                char *end = strstr(buf, "\r\n\r\n");
                if (end) {
                        *ret_len = len;
                        *ret_head = (size_t)(end - buf) + 4;
                        return 0;
                }
        }
        return -E2BIG;
}

/* A plain request "METHOD http://host[:port]/path VERSION": rewritten to origin form with
 * "Connection: close", hop-by-hop and proxy headers dropped. */
static void forward_plain(struct build_egress *e, int fd, char *buf, size_t len, size_t head,
                          const char *method, char *target, const char *version)
{
        char *host = target + 7, *path = strchr(host, '/'), port[8] = "80";
        if (path)
                *path = 0;
        char *colon = strchr(host, ':');
        if (colon) {
                *colon = 0;
                snprintf(port, sizeof(port), "%s", colon + 1);
        }
        if (!allowed(e, host) || strcmp(port, "80") != 0) {
                refuse(fd, e, host);
                return;
        }
        _cleanup_close_ int up = dial(host, port);
        if (up < 0) {
                unreachable(e, fd, host, port, up);
                return;
        }
        dprintf(up, "%s /%s %s\r\n", method, path ? path + 1 : "", version);
        char *line = strstr(buf, "\r\n") + 2;
        while (line < buf + head - 2) {
                char *eol = strstr(line, "\r\n");
                size_t l = (size_t)(eol - line);
                static const char *const drop[] = {
                    "connection:", "proxy-connection:", "keep-alive:", "proxy-authorization:"};
                bool skip = false;
                for (size_t i = 0; i < ELEMENTSOF(drop); i++)
                        skip |= strncasecmp(line, drop[i], strlen(drop[i])) == 0;
                if (!skip && (write_full(up, line, l) < 0 || write_full(up, "\r\n", 2) < 0))
                        return;
                line = eol + 2;
        }
        if (write_full(up, "Connection: close\r\n\r\n", 21) < 0 ||
            write_full(up, buf + head, len - head) < 0)
                return;
        splice_both(fd, up);
}

static void forward_connect(struct build_egress *e, int fd, char *buf, size_t len, size_t head,
                            char *target)
{
        char *colon = strrchr(target, ':');
        if (colon)
                *colon = 0;
        if (!colon || strcmp(colon + 1, "443") != 0 || !allowed(e, target)) {
                refuse(fd, e, target);
                return;
        }
        _cleanup_close_ int up = dial(target, "443");
        if (up < 0) {
                unreachable(e, fd, target, "443", up);
                return;
        }
        const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        if (write_full(fd, ok, sizeof(ok) - 1) < 0 || write_full(up, buf + head, len - head) < 0)
                return;
        splice_both(fd, up);
}

static void *conn_main(void *arg)
{
        struct conn *c = arg;
        _cleanup_close_ int fd = c->fd;
        struct build_egress *e = c->e;
        free(c);
        _cleanup_free_ char *buf = malloc(EGRESS_MAX_HEAD + 1);
        size_t len = 0, head = 0;
        struct timeval tv = {.tv_sec = 30};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        int r = buf ? read_head(fd, buf, &len, &head) : -ENOMEM;
        if (r == -E2BIG)
                answer(fd, "431 Request Header Fields Too Large", "request head too large\n");
        if (r >= 0) {
                tv.tv_sec = 0;
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                char method[16], target[2048], version[16];
                char first[2100];
                size_t l = strcspn(buf, "\r");
                snprintf(first, sizeof(first), "%.*s", (int)MIN(l, sizeof(first) - 1), buf);
                if (sscanf(first, "%15s %2047s %15s", method, target, version) != 3 ||
                    strncmp(version, "HTTP/1.", 7) != 0)
                        answer(fd, "400 Bad Request", "not an HTTP proxy request\n");
                else if (strcmp(method, "CONNECT") == 0)
                        forward_connect(e, fd, buf, len, head, target);
                else if (strncasecmp(target, "http://", 7) == 0)
                        forward_plain(e, fd, buf, len, head, method, target, version);
                else
                        answer(fd, "400 Bad Request",
                               "sbx build egress: a proxy request names its URL in full\n");
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
