/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/agent-log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "thread-util.h"
#include "time-util.h"

#define READ_CHUNK   (16u * 1024)
#define RESUME_BYTES (4u * 1024) /* a throttled FIFO is read again once this much is allowed */

/* Descriptors are what a host of thousands of sandboxes runs out of first (sbxd's RLIMIT_NOFILE),
 * so a sandbox's log holds one while it is idle: the FIFO's read end. The log file is opened by
 * path for each batch that drains into it and closed again. */
struct agent_log {
        int fifo;  /* read end, O_NONBLOCK */
        char *log; /* <dir>/SANDBOX_LOG_NAME */
        char *old; /* <dir>/AGENT_LOG_OLD_NAME */
        int out;   /* the log, O_APPEND, open during one drain() only; else -EBADF */
        uint64_t size;
        uint64_t slot_gen; /* epoll's key: (slot << 32) | generation */
        int64_t tokens;    /* bytes allowed now */
        int64_t last_ms;   /* last refill */
        int64_t resume_ms; /* throttled until then; 0: reading */
        bool eof;          /* every writer is gone: nothing more will come */
        bool over;         /* throttled since the FIFO was last found empty */
        bool noted;        /* the current file says so already */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int epfd = -EBADF;
static struct agent_log **slots;
static size_t n_slots;
static uint32_t generation;

static int open_out(struct agent_log *l)
{
        l->out = open(l->log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (l->out < 0)
                return -errno;
        struct stat st;
        l->size = fstat(l->out, &st) == 0 ? (uint64_t)st.st_size : 0;
        return 0;
}

/* Append to the log, rotating first when the file would pass AGENT_LOG_MAX_BYTES. */
static void out_write(struct agent_log *l, const char *p, size_t n)
{
        if (l->out < 0 && open_out(l) < 0)
                return;
        if (l->size > 0 && l->size + n > AGENT_LOG_MAX_BYTES) {
                (void)rename(l->log, l->old);
                l->out = safe_close(l->out);
                l->noted = false;
                if (open_out(l) < 0)
                        return;
        }
        ssize_t w = write(l->out, p, n);
        if (w > 0)
                l->size += (uint64_t)w;
}

/* In epoll's set or out of it: a FIFO without writers reports EPOLLHUP whatever events asks,
 * so a throttled or finished one is taken out, not masked. */
static void set_reading(struct agent_log *l, bool on)
{
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = l->slot_gen};
        (void)epoll_ctl(epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, l->fifo, on ? &ev : NULL);
}

static void refill(struct agent_log *l, int64_t now)
{
        int64_t t = l->tokens + (now - l->last_ms) * (int64_t)AGENT_LOG_RATE / 1000;
        l->tokens = t > (int64_t)AGENT_LOG_BURST ? (int64_t)AGENT_LOG_BURST : t;
        l->last_ms = now;
}

/* Under lock: copy what the FIFO holds, within the budget (the log is open meanwhile). */
static void drain_open(struct agent_log *l, int64_t now)
{
        char buf[READ_CHUNK];
        if (l->eof || l->resume_ms)
                return;
        refill(l, now);
        while (l->tokens > 0) {
                size_t want = MIN((size_t)l->tokens, sizeof(buf));
                ssize_t n = read(l->fifo, buf, want);
                if (n < 0) { /* EAGAIN: all read, the agent is within the rate again */
                        l->over = false;
                        return;
                }
                if (n == 0) { /* no writer left: the agent is gone */
                        l->eof = true;
                        set_reading(l, false);
                        return;
                }
                out_write(l, buf, (size_t)n);
                l->tokens -= n;
        }
        /* over the rate: the FIFO fills and the agent drops what it writes until then */
        l->resume_ms = now + (int64_t)RESUME_BYTES * 1000 / AGENT_LOG_RATE;
        set_reading(l, false);
        if (l->over && l->noted)
                return; /* once per flood, and once in each file it fills */
        l->over = l->noted = true;
        char note[160];
        int k = snprintf(note, sizeof(note),
                         "\nsbxd: the agent writes more than %u bytes/s to its log: what it "
                         "writes until it slows down is lost\n",
                         AGENT_LOG_RATE);
        out_write(l, note, (size_t)k);
}

static void drain(struct agent_log *l, int64_t now)
{
        drain_open(l, now);
        l->out = safe_close(l->out);
}

static struct agent_log *lookup(uint64_t key)
{
        size_t i = (size_t)(key >> 32);
        return i < n_slots && slots[i] && slots[i]->slot_gen == key ? slots[i] : NULL;
}

/* Under lock: resume the throttled FIFOs whose time came; the next deadline, -1 for none. */
static int resume_due(int64_t now)
{
        int64_t next = -1;
        for (size_t i = 0; i < n_slots; i++) {
                struct agent_log *l = slots[i];
                if (!l || !l->resume_ms)
                        continue;
                if (l->resume_ms <= now) {
                        l->resume_ms = 0;
                        set_reading(l, true);
                        drain(l, now);
                }
                if (l->resume_ms && (next < 0 || l->resume_ms < next))
                        next = l->resume_ms;
        }
        return next < 0 ? -1 : (int)MAX(1, next - now);
}

static void *drain_thread(void *arg)
{
        struct epoll_event ev[64];
        int timeout = -1;
        for (;;) {
                int n = epoll_wait(epfd, ev, ELEMENTSOF(ev), timeout);
                if (n < 0 && errno != EINTR) {
                        log_error_errno(errno, "agent logs: epoll_wait: %m");
                        return NULL;
                }
                pthread_mutex_lock(&lock);
                int64_t now = now_ms();
                for (int i = 0; i < n; i++) {
                        struct agent_log *l = lookup(ev[i].data.u64);
                        if (l)
                                drain(l, now);
                }
                timeout = resume_due(now);
                pthread_mutex_unlock(&lock);
        }
}

int agent_log_start(void)
{
        epfd = epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0)
                return -errno;
        return thread_start_detached(drain_thread, NULL, 0);
}

static int slot_take(struct agent_log *l)
{
        size_t i = 0;
        while (i < n_slots && slots[i])
                i++;
        if (i == n_slots) {
                size_t n = n_slots ? 2 * n_slots : 64;
                struct agent_log **s = reallocarray(slots, n, sizeof(*s));
                if (!s)
                        return -ENOMEM;
                memset(s + n_slots, 0, (n - n_slots) * sizeof(*s));
                slots = s;
                n_slots = n;
        }
        slots[i] = l;
        l->slot_gen = (uint64_t)i << 32 | ++generation;
        return 0;
}

static void free_log(struct agent_log *l)
{
        safe_close(l->fifo);
        safe_close(l->out);
        free(l->log);
        free(l->old);
        free(l);
}

int agent_log_open(const char *dir, struct agent_log **ret, char *fifo_path, size_t size)
{
        struct agent_log *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        *l = (struct agent_log){
            .fifo = -EBADF, .out = -EBADF, .tokens = AGENT_LOG_BURST, .last_ms = now_ms()};
        snprintf(fifo_path, size, "%s/%s", dir, AGENT_LOG_FIFO_NAME);
        int r = 0;
        if (asprintf(&l->log, "%s/%s", dir, SANDBOX_LOG_NAME) < 0)
                l->log = NULL; /* asprintf leaves it undefined on failure */
        if (asprintf(&l->old, "%s/%s", dir, AGENT_LOG_OLD_NAME) < 0)
                l->old = NULL;
        if (!l->log || !l->old) {
                free_log(l);
                return -ENOMEM;
        }
        if (mkfifo(fifo_path, 0600) < 0 && errno != EEXIST)
                r = -errno;
        /* O_NONBLOCK: opening the read end does not wait for a writer, reading never blocks */
        if (r >= 0 &&
            (l->fifo = open(fifo_path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC)) < 0)
                r = -errno;
        struct stat st;
        if (r >= 0 && (fstat(l->fifo, &st) < 0 || !S_ISFIFO(st.st_mode)))
                r = -EINVAL;
        pthread_mutex_lock(&lock);
        if (r >= 0 && epfd < 0)
                r = -ENOTCONN;
        if (r >= 0)
                r = slot_take(l);
        if (r >= 0) {
                struct epoll_event ev = {.events = EPOLLIN, .data.u64 = l->slot_gen};
                if (epoll_ctl(epfd, EPOLL_CTL_ADD, l->fifo, &ev) < 0) {
                        r = -errno;
                        slots[l->slot_gen >> 32] = NULL;
                }
        }
        pthread_mutex_unlock(&lock);
        if (r < 0) {
                free_log(l);
                return r;
        }
        *ret = l;
        return 0;
}

void agent_log_flush(struct agent_log *l)
{
        if (!l)
                return;
        pthread_mutex_lock(&lock);
        drain(l, now_ms());
        pthread_mutex_unlock(&lock);
}

void agent_log_close(struct agent_log *l)
{
        if (!l)
                return;
        pthread_mutex_lock(&lock);
        if (!l->eof && !l->resume_ms)
                (void)epoll_ctl(epfd, EPOLL_CTL_DEL, l->fifo, NULL);
        slots[l->slot_gen >> 32] = NULL;
        pthread_mutex_unlock(&lock);
        free_log(l);
}
