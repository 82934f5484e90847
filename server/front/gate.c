/* SPDX-License-Identifier: Apache-2.0 */
#include "front/gate.h"
#include "front/gate-int.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/stats.h"
#include "http/framing.h"
#include "log.h"
#include "macros.h"
#include "time-util.h"

#define STALE_HANDED_MS 10000 /* handed to MHD and never started: MHD dropped it */
#define SWEEP_MS        250
#define ACCEPT_PAUSE_MS 100
#define CUT_MARGIN      64           /* connections cut, not yet closed, beyond max_active */
#define SLOW_MIN_MS     1000         /* a body is judged slow for eviction after this long */
#define DRAIN_MAX       (256 * 1024) /* input dropped per call after the gate's answer */

unsigned gate_raise_nofile(void)
{
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return 1024;
        if (rl.rlim_cur < rl.rlim_max) {
                rlim_t want = rl.rlim_max == RLIM_INFINITY ? (1u << 20) : rl.rlim_max;
                struct rlimit up = {.rlim_cur = want, .rlim_max = rl.rlim_max};
                if (setrlimit(RLIMIT_NOFILE, &up) == 0)
                        rl.rlim_cur = want;
        }
        return rl.rlim_cur > (1u << 20) ? (1u << 20) : (unsigned)rl.rlim_cur;
}

unsigned gate_mhd_connection_limit(const struct gate *g)
{
        return g->max_active + CUT_MARGIN; /* never reached: the gate refuses first */
}

/* ---- the gate's own answers ---- */

static const char *reason(unsigned status)
{
        switch (status) {
        case 400:
                return "Bad Request";
        case 408:
                return "Request Timeout";
        case 431:
                return "Request Header Fields Too Large";
        case 501:
                return "Not Implemented";
        case 503:
                return "Service Unavailable";
        default:
                return "Error";
        }
}

/* An answer in E2B's error shape, sent without blocking (a small one fits the socket
 * buffer). message: a constant with no character JSON would escape. */
static void send_answer(int fd, unsigned status, const char *message, bool retry_after)
{
        char body[256], out[640];
        int bl = snprintf(body, sizeof(body), "{\"code\":%u,\"message\":\"%s\"}", status, message);
        if (bl < 0 || (size_t)bl >= sizeof(body))
                return;
        int n = snprintf(out, sizeof(out),
                         "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\n"
                         "Content-Length: %d\r\nConnection: close\r\n%s\r\n%s",
                         status, reason(status), bl, retry_after ? "Retry-After: 1\r\n" : "", body);
        if (n > 0 && (size_t)n < sizeof(out))
                (void)send(fd, out, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void gate_by_fd_set(struct gate *g, int fd, struct gate_conn *c)
{
        if (fd >= 0 && (unsigned)fd < g->n_fds)
                g->by_fd[fd] = c;
}

/* A pending or lingering connection: closed (gate thread). Freed by free_dead(), after the
 * epoll batch in progress, which may still hold an event naming it. */
static void drop(struct gate *g, struct gate_conn *c)
{
        list_del(c->state == C_LINGER ? &g->linger : &g->pending, c);
        pthread_mutex_lock(&g->lock);
        if ((unsigned)c->fd < g->n_fds && g->by_fd[c->fd] == c)
                g->by_fd[c->fd] = NULL;
        pthread_mutex_unlock(&g->lock);
        (void)epoll_ctl(g->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -EBADF;
        c->state = C_DEAD;
        list_add(&g->dead, c);
}

static void free_dead(struct gate *g)
{
        while (g->dead.head) {
                struct gate_conn *c = g->dead.head;
                list_del(&g->dead, c);
                free(c);
        }
}

/* Read and drop what the client sent, at most DRAIN_MAX bytes per call (a fast sender must
 * not hold the gate's thread). Returns 0 at the end of its input or on an error, else > 0. */
static ssize_t drain_input(int fd)
{
        static char sink[4096];
        ssize_t n = 1;
        for (size_t total = 0; total < DRAIN_MAX; total += (size_t)n) {
                n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
                if (n <= 0)
                        return n < 0 && (errno == EAGAIN || errno == EINTR) ? 1 : 0;
        }
        return 1;
}

/* Answer and close without losing the answer: what the client sent is read and dropped
 * (an unread byte at close() would make the kernel reset the connection, and the client
 * could lose the answer), the write side is shut, the rest is drained for GATE_LINGER_MS. */
static void answer(struct gate *g, struct gate_conn *c, unsigned status, const char *message,
                   bool retry_after)
{
        if (g->opaque) { /* a plaintext answer means nothing inside TLS */
                drop(g, c);
                return;
        }
        (void)drain_input(c->fd);
        send_answer(c->fd, status, message, retry_after);
        (void)shutdown(c->fd, SHUT_WR);
        list_del(&g->pending, c);
        c->state = C_LINGER;
        c->t_state = now_ms();
        list_add(&g->linger, c);
}

/* ---- pending connections ---- */

static bool admit(struct gate *g, int64_t now);

static void hand_over(struct gate *g, struct gate_conn *c)
{
        (void)epoll_ctl(g->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        list_del(&g->pending, c);
        pthread_mutex_lock(&g->lock);
        __atomic_store_n(&c->state, C_HANDED, __ATOMIC_RELAXED);
        __atomic_store_n(&c->t_state, now_ms(), __ATOMIC_RELAXED);
        list_add(&g->active, c);
        pthread_mutex_unlock(&g->lock);
        stats_count_conn(STATS_CONN_HANDED);
        /* From here the socket is libmicrohttpd's; c may be freed by its threads at once. */
        int fd = c->fd;
        struct sockaddr_storage addr = c->addr;
        socklen_t len = c->addr_len;
        if (MHD_add_connection(g->mhd, fd, (struct sockaddr *)&addr, len) == MHD_YES)
                return;
        /* refused at once (no memory): MHD closed the socket and never saw c */
        pthread_mutex_lock(&g->lock);
        if ((unsigned)fd < g->n_fds && g->by_fd[fd] == c) {
                g->by_fd[fd] = NULL;
                list_del(&g->active, c);
                free(c);
        }
        pthread_mutex_unlock(&g->lock);
}

static void on_pending_input(struct gate *g, struct gate_conn *c, uint32_t events)
{
        static char head[GATE_HEAD_MAX];
        ssize_t n = recv(c->fd, head, sizeof(head), MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                drop(g, c); /* closed before a whole head, or an error */
                return;
        }
        c->got_bytes = true;
        size_t hl = g->opaque ? (size_t)n : http_head_length(head, (size_t)n);
        if (hl == 0) {
                if ((size_t)n >= sizeof(head)) {
                        stats_count_conn(STATS_CONN_REFUSED_FRAMING);
                        answer(g, c, 431, "request head larger than 32768 bytes", false);
                } else if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
                        drop(g, c); /* the client stopped sending: no head will come */
                }
                return;
        }
        const char *msg = NULL;
        unsigned st = g->opaque ? 0 : http_framing_check_head(head, hl, &msg);
        if (st != 0) {
                stats_count_conn(STATS_CONN_REFUSED_FRAMING);
                answer(g, c, st, msg, false);
                return;
        }
        pthread_mutex_lock(&g->lock);
        bool full = !admit(g, now_ms());
        pthread_mutex_unlock(&g->lock);
        if (full) {
                stats_count_conn(STATS_CONN_REFUSED_BUSY);
                answer(g, c, 503, "server busy: too many requests in progress, retry", true);
                return;
        }
        hand_over(g, c);
}

/* Out of fds with nothing to evict: the listening sockets leave the epoll set (they would
 * stay readable) until the next sweep after GATE_ACCEPT_PAUSE_MS. */
static void set_accepting(struct gate *g, bool on)
{
        if (g->accepting == on)
                return;
        g->accepting = on;
        g->accept_resume = now_ms() + ACCEPT_PAUSE_MS;
        for (size_t i = 0; i < g->n_listen; i++) {
                struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &g->listen_fd[i]};
                (void)epoll_ctl(g->epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, g->listen_fd[i], &ev);
        }
}

/* The oldest waiting connection goes (lingering ones first: already answered). */
static bool evict_oldest(struct gate *g)
{
        struct gate_conn *c = g->linger.head ? g->linger.head : g->pending.head;
        if (!c)
                return false;
        if (c->state == C_PENDING)
                stats_count_conn(STATS_CONN_EVICTED);
        drop(g, c);
        return true;
}

static void on_accept(struct gate *g, int lfd)
{
        for (int i = 0; i < 256 && g->accepting; i++) {
                struct sockaddr_storage addr;
                socklen_t len = sizeof(addr);
                int fd = accept4(lfd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
                            errno == ENOMEM) {
                                /* out of fds: make room, or stop accepting for a moment */
                                if (!evict_oldest(g))
                                        set_accepting(g, false);
                                continue;
                        }
                        return; /* EAGAIN, or the client gave up (ECONNABORTED) */
                }
                stats_count_conn(STATS_CONN_ACCEPTED);
                if ((unsigned)fd >= g->n_fds) {
                        close(fd);
                        continue;
                }
                while (g->pending.n + g->linger.n >= g->max_pending && evict_oldest(g))
                        ;
                struct gate_conn *c = calloc(1, sizeof(*c));
                if (!c) {
                        close(fd);
                        continue;
                }
                *c = (struct gate_conn){.g = g,
                                        .fd = fd,
                                        .state = C_PENDING,
                                        .t_state = now_ms(),
                                        .addr = addr,
                                        .addr_len = len};
                pthread_mutex_lock(&g->lock);
                struct gate_conn *stale = g->by_fd[fd];
                if (stale) {
                        /* the fd was closed without a word to the gate: a handed connection
                         * libmicrohttpd dropped before starting it */
                        list_del(&g->active, stale);
                        free(stale);
                }
                g->by_fd[fd] = c;
                pthread_mutex_unlock(&g->lock);
                list_add(&g->pending, c);
                struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = c};
                if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
                        drop(g, c);
        }
}

/* ---- connections in libmicrohttpd ---- */

/* Shut a connection down from the gate's thread (under g->lock, so its socket is still
 * open: libmicrohttpd closes it only after the CLOSED notification). Its own thread sees the
 * end of input and closes it. */
static void cut(struct gate *g, struct gate_conn *c, unsigned status, const char *message,
                enum stats_conn reason)
{
        if (status && !g->opaque)
                send_answer(c->fd, status, message, false);
        (void)shutdown(c->fd, SHUT_RDWR);
        c->cut = true;
        g->n_cut++;
        stats_count_conn(reason);
}

/* A request body's time waiting for the client, and whether that is past its allowance
 * (grace + GATE_BODY_MIN_RATE); *ret_slow: below the minimum rate so far, grace or not. */
static bool body_too_slow(const struct gate_conn *c, int64_t now, bool *ret_slow)
{
        int64_t mark = __atomic_load_n(&c->t_mark, __ATOMIC_RELAXED);
        int64_t waited = __atomic_load_n(&c->wait_ms, __ATOMIC_RELAXED) + (now - mark);
        uint64_t bytes = __atomic_load_n(&c->body_bytes, __ATOMIC_RELAXED);
        *ret_slow = waited >= SLOW_MIN_MS && bytes * 1000 < (uint64_t)waited * GATE_BODY_MIN_RATE;
        return now - mark > GATE_BODY_STALL_MS ||
               waited > GATE_BODY_GRACE_MS + (int64_t)(bytes * 1000 / GATE_BODY_MIN_RATE);
}

/* Whether one more connection may go to libmicrohttpd (under g->lock). At the bound, an idle
 * keep-alive connection (the longest idle) is closed to make room, else a body still in its
 * grace but already below the minimum rate (the slowest): a flood of whole heads with
 * trickled bodies cannot hold every slot for the grace period. Cut connections count until
 * their thread is gone, within the MHD limit's margin. */
static bool admit(struct gate *g, int64_t now)
{
        if (g->active.n >= g->max_active + CUT_MARGIN)
                return false;
        if (g->active.n - g->n_cut < g->max_active)
                return true;
        struct gate_conn *idle = NULL, *slow = NULL;
        int64_t idle_since = 0;
        double slow_rate = 0;
        for (struct gate_conn *c = g->active.head; c; c = c->next) {
                if (c->cut || __atomic_load_n(&c->in_handler, __ATOMIC_RELAXED))
                        continue;
                int st = __atomic_load_n(&c->state, __ATOMIC_RELAXED);
                int64_t t = __atomic_load_n(&c->t_state, __ATOMIC_RELAXED);
                bool is_slow = false;
                if (st == GATE_IDLE && (!idle || t < idle_since)) {
                        idle = c;
                        idle_since = t;
                } else if (st == GATE_BODY && !idle) {
                        (void)body_too_slow(c, now, &is_slow);
                        int64_t waited = __atomic_load_n(&c->wait_ms, __ATOMIC_RELAXED) +
                                         (now - __atomic_load_n(&c->t_mark, __ATOMIC_RELAXED));
                        double rate = (double)__atomic_load_n(&c->body_bytes, __ATOMIC_RELAXED) /
                                      (double)(waited > 0 ? waited : 1);
                        if (is_slow && (!slow || rate < slow_rate)) {
                                slow = c;
                                slow_rate = rate;
                        }
                }
        }
        if (idle)
                cut(g, idle, 0, NULL, STATS_CONN_CUT_IDLE);
        else if (slow)
                cut(g, slow, 408, "request body too slow", STATS_CONN_CUT_BODY);
        else
                return false;
        return g->active.n - g->n_cut < g->max_active;
}

static void watch_active(struct gate *g, int64_t now)
{
        pthread_mutex_lock(&g->lock);
        stats_set_connections(g->pending.n, g->active.n - g->n_cut);
        int64_t idle_ms = g->active.n > g->max_active / 4 * 3 ? GATE_BUSY_IDLE_MS : GATE_IDLE_MS;
        struct gate_conn *next;
        for (struct gate_conn *c = g->active.head; c; c = next) {
                next = c->next;
                int st = __atomic_load_n(&c->state, __ATOMIC_RELAXED);
                int64_t since = now - __atomic_load_n(&c->t_state, __ATOMIC_RELAXED);
                if (st == C_HANDED) {
                        if (since > STALE_HANDED_MS) {
                                if ((unsigned)c->fd < g->n_fds && g->by_fd[c->fd] == c)
                                        g->by_fd[c->fd] = NULL;
                                list_del(&g->active, c);
                                free(c);
                        }
                        continue;
                }
                if (c->cut || __atomic_load_n(&c->in_handler, __ATOMIC_RELAXED))
                        continue;
                if (st == GATE_IDLE && since > idle_ms) {
                        cut(g, c, 0, NULL, STATS_CONN_CUT_IDLE);
                } else if (st == GATE_HEAD && since > GATE_HEAD_MS) {
                        cut(g, c, 408, "request head not complete in time", STATS_CONN_CUT_HEAD);
                } else if (st == GATE_BODY) {
                        bool slow;
                        if (body_too_slow(c, now, &slow))
                                cut(g, c, 408, "request body too slow", STATS_CONN_CUT_BODY);
                }
        }
        pthread_mutex_unlock(&g->lock);
}

static void sweep(struct gate *g)
{
        int64_t now = now_ms();
        while (g->pending.head && now - g->pending.head->t_state > GATE_HEAD_MS) {
                struct gate_conn *c = g->pending.head;
                stats_count_conn(STATS_CONN_LATE_HEAD);
                if (c->got_bytes)
                        answer(g, c, 408, "request head not complete in time", false);
                else
                        drop(g, c);
        }
        while (g->linger.head && now - g->linger.head->t_state > GATE_LINGER_MS)
                drop(g, g->linger.head);
        if (!g->accepting && now >= g->accept_resume)
                set_accepting(g, true);
        watch_active(g, now);
}

static void on_linger_input(struct gate *g, struct gate_conn *c)
{
        if (drain_input(c->fd) == 0)
                drop(g, c);
}

/* The upgraded connections libmicrohttpd closed go lingering (gate thread). */
static void take_back(struct gate *g)
{
        uint64_t v;
        (void)!read(g->back_fd, &v, sizeof(v));
        pthread_mutex_lock(&g->lock);
        struct list l = g->back;
        g->back = (struct list){0};
        pthread_mutex_unlock(&g->lock);
        int64_t now = now_ms();
        while (l.head) {
                struct gate_conn *c = l.head;
                list_del(&l, c);
                /* at the bound, the oldest lingering one goes; never a waiting client */
                if (g->pending.n + g->linger.n >= g->max_pending && g->linger.head)
                        drop(g, g->linger.head);
                if (g->pending.n + g->linger.n >= g->max_pending) {
                        close(c->fd);
                        free(c);
                        continue;
                }
                c->state = C_LINGER;
                c->t_state = now;
                list_add(&g->linger, c);
                /* level-triggered: a client's input past DRAIN_MAX (what it had queued
                 * before it saw the end) keeps being read after its last segment came */
                struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
                if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0)
                        drop(g, c);
        }
}

static void *gate_thread(void *arg)
{
        struct gate *g = arg;
        struct epoll_event evs[256];
        int64_t last_sweep = now_ms();
        for (;;) {
                int n = epoll_wait(g->epfd, evs, (int)ELEMENTSOF(evs), SWEEP_MS);
                for (int i = 0; i < n; i++) {
                        void *p = evs[i].data.ptr;
                        if (p == &g->stop_fd)
                                return NULL;
                        if (p == &g->back_fd) {
                                take_back(g);
                                continue;
                        }
                        if ((int *)p >= g->listen_fd && (int *)p < g->listen_fd + g->n_listen) {
                                on_accept(g, *(int *)p);
                                continue;
                        }
                        struct gate_conn *c = p;
                        if (c->state == C_LINGER)
                                on_linger_input(g, c);
                        else if (c->state == C_PENDING)
                                on_pending_input(g, c, evs[i].events);
                }
                free_dead(g);
                int64_t now = now_ms();
                if (now - last_sweep >= SWEEP_MS / 2) {
                        sweep(g);
                        free_dead(g);
                        last_sweep = now;
                }
        }
}

/* ---- set-up ---- */

static int listen_on(const struct sockaddr_storage *addr, socklen_t len, uint16_t *ret_port)
{
        _cleanup_close_ int fd =
            socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        int one = 1;
        (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (addr->ss_family == AF_INET6)
                (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        if (bind(fd, (const struct sockaddr *)addr, len) < 0 || listen(fd, 4096) < 0)
                return negative_errno();
        struct sockaddr_storage got;
        socklen_t gl = sizeof(got);
        if (getsockname(fd, (struct sockaddr *)&got, &gl) < 0)
                return negative_errno();
        *ret_port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                    : ((struct sockaddr_in *)&got)->sin_port);
        return TAKE_FD(fd);
}

int gate_new(const struct sockaddr_storage *addrs, const socklen_t *addr_lens, size_t n,
             unsigned max_active, struct gate **ret, uint16_t *ret_ports)
{
        if (n == 0 || n > GATE_MAX_LISTEN || max_active == 0)
                return -EINVAL;
        unsigned nofile = gate_raise_nofile();
        struct gate *g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->epfd = g->stop_fd = g->back_fd = -EBADF;
        for (size_t i = 0; i < GATE_MAX_LISTEN; i++)
                g->listen_fd[i] = -EBADF;
        pthread_mutex_init(&g->lock, NULL);
        g->n_fds = nofile;
        g->max_active = max_active;
        g->max_pending = nofile / 4;
        if (g->max_pending < GATE_MIN_PENDING)
                g->max_pending = GATE_MIN_PENDING;
        if (g->max_pending > GATE_MAX_PENDING)
                g->max_pending = GATE_MAX_PENDING;
        g->by_fd = calloc(g->n_fds, sizeof(*g->by_fd));
        int r = g->by_fd ? 0 : -ENOMEM;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = listen_on(&addrs[i], addr_lens[i], &ret_ports[i]);
                if (r >= 0)
                        g->listen_fd[g->n_listen++] = r;
        }
        if (r < 0) {
                gate_free(g);
                return r;
        }
        *ret = g;
        return 0;
}

void gate_set_opaque(struct gate *g)
{
        g->opaque = true;
}

int gate_start(struct gate *g, struct MHD_Daemon *d)
{
        g->mhd = d;
        g->epfd = epoll_create1(EPOLL_CLOEXEC);
        g->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        g->back_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (g->epfd < 0 || g->stop_fd < 0 || g->back_fd < 0)
                return -errno;
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &g->stop_fd};
        if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->stop_fd, &ev) < 0)
                return -errno;
        ev.data.ptr = &g->back_fd;
        if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->back_fd, &ev) < 0)
                return -errno;
        set_accepting(g, true);
        int r = pthread_create(&g->thread, NULL, gate_thread, g);
        if (r != 0)
                return -r;
        g->started = true;
        pthread_mutex_lock(&g->lock);
        g->take_back = true;
        pthread_mutex_unlock(&g->lock);
        log_info("gate: heads within %d ms, at most %u waiting, %d in progress; idle %d ms; "
                 "bodies %d B/s after %d ms",
                 GATE_HEAD_MS, g->max_pending, g->max_active, GATE_IDLE_MS, GATE_BODY_MIN_RATE,
                 GATE_BODY_GRACE_MS);
        return 0;
}

static void stop_thread(struct gate *g)
{
        if (!g->started)
                return;
        uint64_t one = 1;
        (void)!write(g->stop_fd, &one, sizeof(one));
        pthread_join(g->thread, NULL);
        g->started = false;
}

void gate_quiesce(struct gate *g)
{
        if (!g || g->quiesced)
                return;
        g->quiesced = true;
        stop_thread(g);
        /* upgraded connections closed from now on just close */
        pthread_mutex_lock(&g->lock);
        g->take_back = false;
        struct list back = g->back;
        g->back = (struct list){0};
        pthread_mutex_unlock(&g->lock);
        while (back.head) {
                struct gate_conn *c = back.head;
                list_del(&back, c);
                close(c->fd);
                free(c);
        }
        for (size_t i = 0; i < g->n_listen; i++)
                g->listen_fd[i] = safe_close(g->listen_fd[i]);
        g->n_listen = 0;
#define N(e) (unsigned long long)stats_conn(STATS_CONN_##e)
        log_info("gate: %llu accepted, %llu handed over; refused: %llu framing, %llu busy (503); "
                 "closed: %llu evicted, %llu late heads; cut: %llu idle, %llu heads, %llu bodies",
                 N(ACCEPTED), N(HANDED), N(REFUSED_FRAMING), N(REFUSED_BUSY), N(EVICTED),
                 N(LATE_HEAD), N(CUT_IDLE), N(CUT_HEAD), N(CUT_BODY));
#undef N
        while (g->pending.head)
                drop(g, g->pending.head);
        while (g->linger.head)
                drop(g, g->linger.head);
        free_dead(g);
}

void gate_free(struct gate *g)
{
        if (!g)
                return;
        gate_quiesce(g);
        /* entries left: handed ones MHD never started (the rest went with MHD_stop_daemon) */
        while (g->active.head) {
                struct gate_conn *c = g->active.head;
                list_del(&g->active, c);
                free(c);
        }
        safe_close(g->epfd);
        safe_close(g->stop_fd);
        safe_close(g->back_fd);
        free(g->by_fd);
        pthread_mutex_destroy(&g->lock);
        free(g);
}
