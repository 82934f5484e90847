/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/owner-conn.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fd-util.h"
#include "http/framing.h"
#include "macros.h"
#include "time-util.h"

#define LINE_MAX_BYTES 4096 /* a chunk-size line or a trailer line */

static struct {
        struct owner_conn *c;
        int64_t since;
} pool[OWNER_POOL_MAX];
static size_t pool_n;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static void conn_free(struct owner_conn *c)
{
        if (!c)
                return;
        safe_close(c->fd);
        free(c);
}

/* A pooled connection still usable: young enough, and nothing to read (an owner that closed
 * it shows as readable: its end of input). */
static bool still_open(const struct owner_conn *c, int64_t since, int64_t now)
{
        if (now - since > OWNER_REUSE_IDLE_MS)
                return false;
        struct pollfd p = {.fd = c->fd, .events = POLLIN | POLLRDHUP};
        return poll(&p, 1, 0) == 0;
}

static struct owner_conn *pool_take(const char *addr)
{
        struct owner_conn *got = NULL, *stale[OWNER_POOL_MAX];
        size_t n_stale = 0;
        int64_t now = now_ms();
        pthread_mutex_lock(&pool_lock);
        for (size_t i = pool_n; i-- > 0 && !got;) {
                if (strcmp(pool[i].c->addr, addr) != 0)
                        continue;
                struct owner_conn *c = pool[i].c;
                bool ok = still_open(c, pool[i].since, now);
                pool[i] = pool[--pool_n];
                if (ok)
                        got = c;
                else
                        stale[n_stale++] = c;
        }
        pthread_mutex_unlock(&pool_lock);
        for (size_t i = 0; i < n_stale; i++)
                conn_free(stale[i]);
        return got;
}

void owner_conn_release(struct owner_conn *c, bool reusable)
{
        if (!c)
                return;
        if (!reusable || c->len > 0) { /* bytes beyond the answer: not a clean connection */
                conn_free(c);
                return;
        }
        struct owner_conn *drop = NULL;
        c->off = c->len = 0;
        c->body = OWNER_BODY_NONE;
        c->body_done = c->in_chunk = false;
        pthread_mutex_lock(&pool_lock);
        if (pool_n == OWNER_POOL_MAX) { /* the oldest goes */
                size_t old = 0;
                for (size_t i = 1; i < pool_n; i++)
                        if (pool[i].since < pool[old].since)
                                old = i;
                drop = pool[old].c;
                pool[old] = pool[--pool_n];
        }
        pool[pool_n].c = c;
        pool[pool_n++].since = now_ms();
        pthread_mutex_unlock(&pool_lock);
        conn_free(drop);
}

static int connect_to(const char *addr)
{
        char host[128], port[8];
        const char *colon = strrchr(addr, ':');
        if (!colon || colon == addr || strlen(colon + 1) >= sizeof(port))
                return -EINVAL;
        size_t hl = (size_t)(colon - addr);
        if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') { /* [v6]:port */
                addr++;
                hl -= 2;
        }
        if (hl >= sizeof(host))
                return -EINVAL;
        memcpy(host, addr, hl);
        host[hl] = 0;
        snprintf(port, sizeof(port), "%s", colon + 1);
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *res;
        if (getaddrinfo(host, port, &hints, &res) != 0)
                return -EHOSTUNREACH;
        int r = -EHOSTUNREACH;
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
                int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        r = -errno;
                        continue;
                }
                if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
                        r = -errno;
                        close(fd);
                        continue;
                }
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                int err = 0;
                socklen_t el = sizeof(err);
                int n = poll(&p, 1, OWNER_CONNECT_MS);
                if (n <= 0)
                        err = n == 0 ? ETIMEDOUT : errno;
                else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0)
                        err = errno;
                if (err) {
                        r = -err;
                        close(fd);
                        continue;
                }
                int one = 1; /* every write of the relay is a whole piece: send at once */
                (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                r = fd;
                break;
        }
        freeaddrinfo(res);
        return r;
}

int owner_conn_open(const char *addr, bool fresh, struct owner_conn **ret)
{
        struct owner_conn *c = fresh ? NULL : pool_take(addr);
        if (c) {
                c->reused = true;
                *ret = c;
                return 0;
        }
        int fd = connect_to(addr);
        if (fd < 0)
                return fd;
        c = calloc(1, sizeof(*c));
        if (!c) {
                close(fd);
                return -ENOMEM;
        }
        c->fd = fd;
        snprintf(c->addr, sizeof(c->addr), "%s", addr);
        *ret = c;
        return 0;
}

int owner_conn_send(struct owner_conn *c, const void *data, size_t len)
{
        return send_all_wait(c->fd, data, len, OWNER_SEND_MS);
}

/* Wait until the owner's socket is readable; a client hang-up meanwhile: -ECONNABORTED. */
static int wait_readable(int fd, int client_fd)
{
        for (;;) {
                struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                                      {.fd = client_fd, .events = POLLRDHUP}};
                int n = poll(p, client_fd >= 0 ? 2 : 1, -1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (p[0].revents)
                        return 0; /* data, its end, or an error: recv says which */
                if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
                        return -ECONNABORTED;
        }
}

/* More bytes into the buffer (moved to its start first). Returns bytes read, 0 at the
 * owner's end of input, -ENOBUFS when the buffer is full. */
static ssize_t fill(struct owner_conn *c, int client_fd)
{
        if (c->off > 0) {
                memmove(c->buf, c->buf + c->off, c->len);
                c->off = 0;
        }
        if (c->len == sizeof(c->buf))
                return -ENOBUFS;
        for (;;) {
                ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
                if (n >= 0) {
                        c->len += (size_t)n;
                        return n;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        return -errno;
                int r = wait_readable(c->fd, client_fd);
                if (r < 0)
                        return r;
        }
}

static void consume(struct owner_conn *c, size_t n)
{
        c->off += n;
        c->len -= n;
        if (c->len == 0)
                c->off = 0;
}

static char *trim(char *s)
{
        while (*s == ' ' || *s == '\t')
                s++;
        size_t l = strlen(s);
        while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r'))
                s[--l] = 0;
        return s;
}

static int parse_head(struct owner_head *h, const char *raw, size_t len)
{
        memcpy(h->raw, raw, len);
        h->raw[len] = 0;
        h->n_headers = 0;
        h->chunked = h->has_length = h->close = false;
        char *save = NULL, *line = strtok_r(h->raw, "\n", &save);
        if (!line || strncmp(line, "HTTP/1.", 7) != 0 || strlen(line) < 12)
                return -EPROTO;
        bool http10 = line[7] == '0';
        h->status = (unsigned)strtoul(line + 9, NULL, 10);
        if (h->status < 100 || h->status > 999)
                return -EPROTO;
        bool keep_alive = false;
        while ((line = strtok_r(NULL, "\n", &save))) {
                char *colon = strchr(line, ':');
                if (!colon) {
                        if (*trim(line))
                                return -EPROTO;
                        continue;
                }
                if (h->n_headers == OWNER_MAX_HEADERS)
                        return -E2BIG;
                *colon = 0;
                struct owner_header *x = &h->headers[h->n_headers++];
                x->name = trim(line);
                x->value = trim(colon + 1);
                if (strcasecmp(x->name, "Transfer-Encoding") == 0) {
                        size_t vl = strlen(x->value);
                        h->chunked = vl >= 7 && strcasecmp(x->value + vl - 7, "chunked") == 0;
                } else if (strcasecmp(x->name, "Content-Length") == 0) {
                        h->has_length = true;
                        h->length = strtoull(x->value, NULL, 10);
                } else if (strcasecmp(x->name, "Connection") == 0) {
                        h->close |= strcasestr(x->value, "close") != NULL;
                        keep_alive |= strcasestr(x->value, "keep-alive") != NULL;
                }
        }
        if (http10 && !keep_alive)
                h->close = true;
        return 0;
}

int owner_conn_read_head(struct owner_conn *c, int client_fd, bool upgrade, struct owner_head *h)
{
        bool any = false;
        for (;;) {
                size_t hl = http_head_length(c->buf + c->off, c->len);
                if (hl == 0) {
                        ssize_t n = fill(c, client_fd);
                        if (n == -ENOBUFS)
                                return -E2BIG;
                        if (n < 0)
                                return (int)n;
                        if (n == 0)
                                return any || c->len > 0 ? -EPROTO : -EPIPE;
                        any = true;
                        continue;
                }
                int r = parse_head(h, c->buf + c->off, hl);
                consume(c, hl);
                if (r < 0)
                        return r;
                if (h->status == 101 && !upgrade)
                        return -EPROTO;
                if (h->status >= 200 || h->status == 101)
                        return 0;
                any = true; /* a 100 Continue or another interim answer: the next head */
        }
}

bool owner_conn_body_start(struct owner_conn *c, const struct owner_head *h, const char *method)
{
        c->body_done = false;
        c->in_chunk = false;
        c->left = 0;
        if (strcmp(method, "HEAD") == 0 || h->status == 204 || h->status == 304 || h->status < 200)
                c->body = OWNER_BODY_NONE;
        else if (h->chunked)
                c->body = OWNER_BODY_CHUNKED;
        else if (h->has_length)
                c->body = OWNER_BODY_LENGTH, c->left = h->length;
        else
                c->body = OWNER_BODY_CLOSE;
        if (c->body == OWNER_BODY_NONE || (c->body == OWNER_BODY_LENGTH && c->left == 0))
                c->body_done = true;
        return !h->close && c->body != OWNER_BODY_CLOSE;
}

/* A whole line (up to LF) at the buffer's start; returns its length with the LF. */
static ssize_t line(struct owner_conn *c, int client_fd)
{
        for (;;) {
                char *lf = memchr(c->buf + c->off, '\n', c->len);
                if (lf)
                        return lf - (c->buf + c->off) + 1;
                if (c->len >= LINE_MAX_BYTES)
                        return -EPROTO;
                ssize_t n = fill(c, client_fd);
                if (n < 0)
                        return n;
                if (n == 0)
                        return -EPROTO; /* the owner closed mid-answer */
        }
}

/* CHUNKED: at a chunk-size line, read it (and the trailer section after the last chunk). */
static int next_chunk(struct owner_conn *c, int client_fd)
{
        ssize_t l = line(c, client_fd);
        if (l < 0)
                return (int)l;
        char *end;
        const char *s = c->buf + c->off;
        unsigned long long size = strtoull(s, &end, 16);
        if (end == s)
                return -EPROTO;
        consume(c, (size_t)l);
        if (size > 0) {
                c->left = size;
                c->in_chunk = true;
                return 0;
        }
        for (;;) { /* trailer fields up to an empty line: dropped */
                l = line(c, client_fd);
                if (l < 0)
                        return (int)l;
                bool empty = l == 1 || (l == 2 && c->buf[c->off] == '\r');
                consume(c, (size_t)l);
                if (empty)
                        break;
        }
        c->body_done = true;
        return 0;
}

ssize_t owner_conn_body_read(struct owner_conn *c, int client_fd, char *out, size_t max)
{
        while (!c->body_done) {
                if (c->body == OWNER_BODY_CHUNKED && !c->in_chunk) {
                        int r = next_chunk(c, client_fd);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (c->body == OWNER_BODY_CHUNKED && c->left == 0) { /* the CRLF after data */
                        ssize_t l = line(c, client_fd);
                        if (l < 0)
                                return l;
                        consume(c, (size_t)l);
                        c->in_chunk = false;
                        continue;
                }
                size_t want = max;
                if (c->body != OWNER_BODY_CLOSE && c->left < want)
                        want = (size_t)c->left;
                if (c->len > 0) {
                        size_t n = MIN(want, c->len);
                        memcpy(out, c->buf + c->off, n);
                        consume(c, n);
                        c->left -= c->body != OWNER_BODY_CLOSE ? n : 0;
                        if (c->body == OWNER_BODY_LENGTH && c->left == 0)
                                c->body_done = true;
                        return (ssize_t)n;
                }
                /* nothing buffered: straight into out */
                ssize_t n = recv(c->fd, out, want, MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                        int r = wait_readable(c->fd, client_fd);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (n < 0)
                        return -errno;
                if (n == 0) {
                        if (c->body != OWNER_BODY_CLOSE)
                                return -EPROTO; /* cut short */
                        c->body_done = true;
                        return 0;
                }
                if (c->body != OWNER_BODY_CLOSE)
                        c->left -= (uint64_t)n;
                if (c->body == OWNER_BODY_LENGTH && c->left == 0)
                        c->body_done = true;
                return n;
        }
        return 0;
}

const char *owner_head_get(const struct owner_head *h, const char *name)
{
        for (size_t i = 0; i < h->n_headers; i++)
                if (strcasecmp(h->headers[i].name, name) == 0)
                        return h->headers[i].value;
        return NULL;
}
