/* SPDX-License-Identifier: Apache-2.0 */
#include "serve/tls-proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "serve/fatal.h"
#include "serve/slot-log.h"
#include "policy/link-addr.h"
#include "policy/proxy-parse.h"
#include "log.h"
#include "thread-util.h"
#include "macros.h"
#include "time-util.h"

struct egress_proxy {
        struct egress_proxy_hooks h;
        struct egress_tls *tls;
        int sock4, sock6, wake;
        pthread_t thread;
        pthread_mutex_t lock; /* everything below */
        pthread_cond_t idle;
        bool stopping;
        unsigned active;
        int fds[EGRESS_PROXY_CONNS]; /* client sockets of open connections, -1 free */
        unsigned short per_slot[EGRESS_SLOTS_MAX];
};

struct conn {
        struct egress_proxy *p;
        int fd, idx, slot;
        struct sockaddr_storage peer;
};

/* ---- helpers ---- */

/* Timeouts both ways, and no Nagle: the proxy forwards what it read at once, often a small
 * record after another (a response's head, then its body), which Nagle and the peer's delayed
 * ACK would hold back ~40 ms. */
static void set_timeouts(int fd, int ms)
{
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static int original_dst(int fd, int family, struct sockaddr_storage *ret, socklen_t *ret_len)
{
        socklen_t l = family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
        int r = family == AF_INET ? getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, ret, &l)
                                  : getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, ret, &l);
        if (r < 0)
                return -errno;
        *ret_len = l;
        return 0;
}

static int connect_upstream(const struct sockaddr_storage *dst, socklen_t len)
{
        _cleanup_close_ int fd =
            socket(dst->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *)dst, len) < 0 && errno != EINPROGRESS)
                return -errno;
        struct pollfd pf = {.fd = fd, .events = POLLOUT};
        int n = poll(&pf, 1, EGRESS_PROXY_CONNECT_MS);
        int err = 0;
        socklen_t el = sizeof(err);
        if (n <= 0)
                return n < 0 ? -errno : -ETIMEDOUT;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err)
                return err ? -err : -errno;
        if (fd_set_nonblock(fd, 0) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* The server name of the ClientHello waiting on fd, without reading it: 1 (name), 0 none. */
static int peek_sni(int fd, char name[static 256])
{
        unsigned char buf[PROXY_HEAD_MAX + 5];
        int64_t deadline = now_ms() + EGRESS_PROXY_HEAD_MS;
        ssize_t last = -1;
        while (now_ms() < deadline) {
                struct pollfd pf = {.fd = fd, .events = POLLIN};
                if (poll(&pf, 1, (int)MAX(deadline - now_ms(), 1)) <= 0)
                        return 0;
                ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
                if (n <= 0)
                        return 0;
                int r = proxy_tls_sni(buf, (size_t)n, name);
                if (r != 0)
                        return r > 0;
                if (n == last) /* nothing new: wait a little for the rest of the record */
                        (void)nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
                last = n;
        }
        return 0;
}

/* ---- relays ---- */

/* Either side's bytes to the other until both are done or EGRESS_PROXY_IDLE_MS pass quietly.
 * s[i] NULL: plain fds. */
static void relay(int fd[2], SSL *s[2])
{
        char buf[16384];
        bool open_[2] = {true, true};
        while (open_[0] || open_[1]) {
                struct pollfd pf[2];
                int ready = 0;
                for (int i = 0; i < 2; i++) {
                        pf[i] = (struct pollfd){.fd = open_[i] ? fd[i] : -1, .events = POLLIN};
                        if (open_[i] && s[i] && SSL_pending(s[i]) > 0)
                                ready = 1;
                }
                if (!ready) {
                        int n = poll(pf, 2, EGRESS_PROXY_IDLE_MS);
                        if (n <= 0)
                                return;
                }
                for (int i = 0; i < 2; i++) {
                        bool pend = open_[i] && s[i] && SSL_pending(s[i]) > 0;
                        if (!open_[i] || !(pend || (pf[i].revents & (POLLIN | POLLHUP | POLLERR))))
                                continue;
                        int o = 1 - i;
                        ssize_t n =
                            s[i] ? SSL_read(s[i], buf, sizeof(buf)) : read(fd[i], buf, sizeof(buf));
                        if (n <= 0) { /* this side is done: tell the other, keep reading it */
                                open_[i] = false;
                                if (s[o])
                                        (void)SSL_shutdown(s[o]);
                                else
                                        (void)shutdown(fd[o], SHUT_WR);
                                if (s[i]) /* a TLS side that ended ends the connection */
                                        return;
                                continue;
                        }
                        int w = s[o] ? (SSL_write(s[o], buf, (int)n) == (int)n ? 0 : -EIO)
                                     : write_full(fd[o], buf, (size_t)n);
                        if (w < 0)
                                return;
                }
        }
}

/* ---- interception ---- */

static int reply_error(SSL *s, const char *status, const char *msg)
{
        char out[1024];
        int n = snprintf(out, sizeof(out),
                         "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                         "Connection: close\r\n\r\n%s\n",
                         status, strlen(msg) + 1, msg);
        return SSL_write(s, out, n) == n ? 0 : -EIO;
}

/* The head of the request on s into buf: its length, with the bytes read past it in *extra. */
static int read_head(SSL *s, char *buf, size_t size, size_t *ret_got)
{
        size_t got = 0;
        for (;;) {
                int n = SSL_read(s, buf + got, (int)(size - got - 1));
                if (n <= 0)
                        return -EIO;
                got += (size_t)n;
                int h = proxy_http_head_len(buf, got);
                if (h != 0) {
                        *ret_got = got;
                        return h;
                }
                if (got >= size - 1)
                        return -EMSGSIZE;
        }
}

/* cJSON_Delete of resolved headers, their values wiped first. */
static void wipe_delete(cJSON *o)
{
        const cJSON *h;
        cJSON_ArrayForEach(h, o)
        {
                if (cJSON_IsString(h))
                        explicit_bzero(h->valuestring, strlen(h->valuestring));
        }
        cJSON_Delete(o);
}

static int secret_get(void *arg, const char *name, char *buf, size_t size)
{
        struct conn *c = arg;
        return c->p->h.secret(c->p->h.arg, c->slot, name, buf, size);
}

/* The transform's headers with their placeholders resolved; -ENOENT names the missing secret
 * in *ret_missing. */
static int resolve_headers(struct conn *c, const cJSON *in, cJSON **ret, const char **ret_missing)
{
        char v[NET_TRANSFORM_TOTAL_MAX + 1];
        cJSON *o = cJSON_CreateObject();
        const cJSON *h;
        int r = o ? 0 : -ENOMEM;
        cJSON_ArrayForEach(h, in)
        {
                int n = r < 0 ? r
                              : proxy_resolve_value(h->valuestring, secret_get, c, v, sizeof(v),
                                                    ret_missing);
                if (n >= 0 && !cJSON_AddStringToObject(o, h->string, v))
                        n = -ENOMEM;
                if (n >= 0)
                        explicit_bzero(v, (size_t)n);
                if (r >= 0 && n < 0)
                        r = n;
        }
        if (r < 0) {
                explicit_bzero(v, sizeof(v));
                wipe_delete(o);
                return r;
        }
        *ret = o;
        return 0;
}

static void intercept(struct conn *c, int ufd, const char *name, const cJSON *headers)
{
        struct egress_proxy *p = c->p;
        char head[PROXY_HEAD_MAX + 1], out[2 * PROXY_HEAD_MAX + 2];
        SSL *cs = egress_tls_server(p->tls, name), *us = egress_tls_client(p->tls, name);
        size_t got = 0;
        if (!cs || !us || SSL_set_fd(cs, c->fd) != 1 || SSL_set_fd(us, ufd) != 1) {
                log_debug("egress proxy: slot %d: no TLS for '%s' (%s)", c->slot, name,
                          !cs   ? "server side"
                          : !us ? "client side"
                                : "descriptors");
                goto out;
        }
        if (SSL_accept(cs) != 1) {
                log_debug("egress proxy: slot %d: TLS from the sandbox for '%s' failed", c->slot,
                          name);
                goto out;
        }
        int hl = read_head(cs, head, sizeof(head), &got);
        if (hl < 0) {
                (void)reply_error(cs, "431 Request Header Fields Too Large",
                                  "sbx egress proxy: the request head is too large or broken");
                goto out;
        }
        int t = proxy_http_check_target(head, (size_t)hl, name);
        if (t < 0) { /* the header goes to the name that was proven, and only there */
                egress_slot_log(LOG_LEVEL_INFO, c->slot,
                                "egress proxy: slot %d: a request on '%s' for another host "
                                "refused",
                                c->slot, name);
                (void)reply_error(cs, "421 Misdirected Request",
                                  t == -EXDEV ? "sbx egress proxy: the Host header must be the "
                                                "name the connection was opened for"
                                              : "sbx egress proxy: the request target must be a "
                                                "path, with a Host header");
                goto out;
        }
        if (SSL_connect(us) != 1) {
                egress_slot_log(LOG_LEVEL_WARNING, c->slot,
                                "egress proxy: slot %d: '%s' did not prove its name (%s)", c->slot,
                                name, X509_verify_cert_error_string(SSL_get_verify_result(us)));
                (void)reply_error(cs, "502 Bad Gateway",
                                  "sbx egress proxy: the server's certificate did not verify");
                goto out;
        }
        cJSON *resolved = NULL;
        const char *missing = NULL;
        int r = resolve_headers(c, headers, &resolved, &missing);
        if (r == -ENOENT) {
                char msg[NET_TRANSFORM_VALUE_MAX + 100];
                snprintf(msg, sizeof(msg), "sbx egress proxy: secret '%.200s' does not exist",
                         missing);
                (void)reply_error(cs, "502 Bad Gateway", msg);
                goto out;
        }
        int n = r < 0 ? r : proxy_http_rewrite(head, (size_t)hl, resolved, out, sizeof(out));
        wipe_delete(resolved);
        if (n < 0) {
                (void)reply_error(cs, "502 Bad Gateway", "sbx egress proxy: cannot rewrite");
                goto out;
        }
        bool sent = SSL_write(us, out, n) == n &&
                    (got == (size_t)hl ||
                     SSL_write(us, head + hl, (int)(got - (size_t)hl)) == (int)(got - (size_t)hl));
        explicit_bzero(out, (size_t)n);
        if (sent) {
                set_timeouts(c->fd, EGRESS_PROXY_IDLE_MS);
                relay((int[2]){c->fd, ufd}, (SSL *[2]){cs, us});
        }
out:
        explicit_bzero(head, sizeof(head));
        ERR_clear_error();
        SSL_free(cs);
        SSL_free(us);
}

static void serve(struct conn *c)
{
        struct net_policy pol = {};
        int fam = c->peer.ss_family;
        const void *addr = fam == AF_INET
                               ? (const void *)&((struct sockaddr_in *)&c->peer)->sin_addr
                               : (const void *)&((struct sockaddr_in6 *)&c->peer)->sin6_addr;
        if (c->slot < 0) /* not a sandbox's address: nothing to serve */
                return;
        int slot = c->p->h.lookup(c->p->h.arg, fam, addr, &pol);
        if (slot < 0) {
                log_debug("egress proxy: slot %d: no policy for its address", c->slot);
                return;
        }
        if (slot != c->slot) { /* cannot be: both read the same address */
                net_policy_done(&pol);
                return;
        }
        struct sockaddr_storage dst;
        socklen_t dl = 0;
        char name[256] = "";
        int r = original_dst(c->fd, fam, &dst, &dl);
        if (r < 0)
                log_debug("egress proxy: slot %d: no original destination: %s", c->slot,
                          strerror(-r));
        _cleanup_close_ int ufd = -EBADF;
        if (r >= 0) {
                set_timeouts(c->fd, EGRESS_PROXY_HEAD_MS);
                const struct net_transform *t =
                    peek_sni(c->fd, name) ? net_transform_find(&pol, name) : NULL;
                ufd = connect_upstream(&dst, dl);
                if (ufd < 0)
                        log_debug("egress proxy: slot %d: connecting to '%s' upstream: %s", c->slot,
                                  name, strerror(-ufd));
                if (ufd >= 0) {
                        set_timeouts(ufd, EGRESS_PROXY_IDLE_MS);
                        if (t)
                                intercept(c, ufd, name, t->headers);
                        else {
                                set_timeouts(c->fd, EGRESS_PROXY_IDLE_MS);
                                relay((int[2]){c->fd, ufd}, (SSL *[2]){NULL, NULL});
                        }
                }
        }
        net_policy_done(&pol);
}

static void *conn_main(void *arg)
{
        struct conn *c = arg;
        struct egress_proxy *p = c->p;
        serve(c);
        pthread_mutex_lock(&p->lock);
        p->fds[c->idx] = -1;
        close(c->fd);
        if (c->slot >= 0)
                p->per_slot[c->slot]--;
        if (--p->active == 0)
                pthread_cond_broadcast(&p->idle);
        pthread_mutex_unlock(&p->lock);
        free(c);
        return NULL;
}

/* The slot of a sandbox address, without asking the owner: -1. */
static int slot_of(const struct sockaddr_storage *a)
{
        return a->ss_family == AF_INET
                   ? egress_slot_of(AF_INET, &((const struct sockaddr_in *)a)->sin_addr)
                   : egress_slot_of(AF_INET6, ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr);
}

static void accept_one(struct egress_proxy *p, int sock)
{
        struct conn *c = calloc(1, sizeof(*c));
        socklen_t l = sizeof(c ? c->peer : (struct sockaddr_storage){});
        int fd = c ? accept4(sock, (struct sockaddr *)&c->peer, &l, SOCK_CLOEXEC) : -1;
        if (fd < 0) {
                free(c);
                return;
        }
        c->p = p;
        c->fd = fd;
        c->slot = slot_of(&c->peer);
        pthread_mutex_lock(&p->lock);
        c->idx = -1;
        for (int i = 0; i < EGRESS_PROXY_CONNS && c->idx < 0; i++)
                if (p->fds[i] < 0)
                        c->idx = i;
        bool ok = c->idx >= 0 && c->slot >= 0 && p->per_slot[c->slot] < EGRESS_PROXY_PER_SANDBOX;
        bool started = true;
        if (ok) {
                p->fds[c->idx] = fd;
                p->per_slot[c->slot]++;
                p->active++;
                if (thread_start_detached(conn_main, c, 0) < 0) {
                        p->fds[c->idx] = -1;
                        p->per_slot[c->slot]--;
                        p->active--;
                        ok = started = false;
                }
        }
        pthread_mutex_unlock(&p->lock);
        if (!ok) {
                const char *why = c->slot < 0  ? "not from a sandbox's address"
                                  : c->idx < 0 ? "all the proxy's connections are in use"
                                  : !started   ? "no thread for it"
                                               : "all the sandbox's connections are in use";
                egress_slot_log(LOG_LEVEL_INFO, c->slot,
                                "egress proxy: slot %d: a connection refused: %s", c->slot, why);
                close(fd);
                free(c);
        }
}

static void *accept_main(void *arg)
{
        struct egress_proxy *p = arg;
        for (;;) {
                struct pollfd pf[3] = {
                    {p->sock4, POLLIN, 0}, {p->sock6, POLLIN, 0}, {p->wake, POLLIN, 0}};
                if (poll(pf, 3, -1) < 0 && errno != EINTR)
                        egress_serve_fatal("polling", -errno);
                if (pf[2].revents)
                        break;
                for (int i = 0; i < 2; i++)
                        if (pf[i].revents & POLLIN)
                                accept_one(p, pf[i].fd);
        }
        return NULL;
}

/* p's sockets, lock and memory, once its thread is gone (or never started). */
static void proxy_free(struct egress_proxy *p)
{
        safe_close(p->sock4);
        safe_close(p->sock6);
        safe_close(p->wake);
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->idle);
        free(p);
}

int egress_proxy_start(const struct egress_proxy_hooks *hooks, struct egress_tls *tls, int sock4,
                       int sock6, struct egress_proxy **ret)
{
        struct egress_proxy *p = calloc(1, sizeof(*p));
        if (!p) {
                safe_close(sock4);
                safe_close(sock6);
                return -ENOMEM;
        }
        p->h = *hooks;
        p->tls = tls;
        p->sock4 = sock4;
        p->sock6 = sock6;
        p->wake = -1;
        for (int i = 0; i < EGRESS_PROXY_CONNS; i++)
                p->fds[i] = -1;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->idle, NULL);
        int r = 0;
        if (fd_set_nonblock(sock4, 1) < 0 || fd_set_nonblock(sock6, 1) < 0 ||
            (p->wake = eventfd(0, EFD_CLOEXEC)) < 0)
                r = -errno;
        if (r >= 0)
                r = -pthread_create(&p->thread, NULL, accept_main, p);
        if (r < 0) {
                proxy_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

void egress_proxy_stop(struct egress_proxy *p)
{
        if (!p)
                return;
        uint64_t one = 1;
        if (write(p->wake, &one, sizeof(one)) < 0)
                log_warning_errno(-errno, "egress proxy: waking its thread: %m");
        pthread_join(p->thread, NULL);
        pthread_mutex_lock(&p->lock);
        for (int i = 0; i < EGRESS_PROXY_CONNS; i++)
                if (p->fds[i] >= 0)
                        (void)shutdown(p->fds[i], SHUT_RDWR);
        while (p->active > 0)
                pthread_cond_wait(&p->idle, &p->lock);
        pthread_mutex_unlock(&p->lock);
        proxy_free(p);
}
