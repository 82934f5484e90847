/* SPDX-License-Identifier: Apache-2.0 */
#include "proc/outlog.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "connect.h"
#include "macros.h"
#include "time-util.h"

#define CLIENT_CHECK_MS 500
#define MAX_CHUNKS      4096u

struct chunk {
        struct chunk *next;
        uint64_t seq;
        enum agent_output_stream kind;
        size_t len;
        uint8_t data[];
};

struct agent_outlog {
        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */
        unsigned refs;
        struct chunk *head, *tail;
        size_t bytes;
        unsigned n_chunks;
        uint64_t next_seq;
        bool ended;
        bool deadline_killed;
        struct agent_exit exit;
};

struct agent_outlog *agent_outlog_new(void)
{
        struct agent_outlog *l = calloc(1, sizeof(*l));
        pthread_condattr_t ca;

        if (!l)
                return NULL;
        pthread_mutex_init(&l->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&l->cond, &ca);
        pthread_condattr_destroy(&ca);
        l->refs = 1;
        return l;
}

struct agent_outlog *agent_outlog_ref(struct agent_outlog *l)
{
        pthread_mutex_lock(&l->lock);
        l->refs++;
        pthread_mutex_unlock(&l->lock);
        return l;
}

void agent_outlog_unref(struct agent_outlog *l)
{
        bool last;

        if (!l)
                return;
        pthread_mutex_lock(&l->lock);
        last = --l->refs == 0;
        pthread_mutex_unlock(&l->lock);
        if (!last)
                return;
        while (l->head) {
                struct chunk *c = l->head;
                l->head = c->next;
                free(c);
        }
        pthread_cond_destroy(&l->cond);
        pthread_mutex_destroy(&l->lock);
        free(l);
}

int agent_outlog_append(struct agent_outlog *l, enum agent_output_stream kind, const uint8_t *buf,
                        size_t len)
{
        struct chunk *c = malloc(sizeof(*c) + len);

        if (!c)
                return -ENOMEM;
        c->next = NULL;
        c->kind = kind;
        c->len = len;
        memcpy(c->data, buf, len);
        pthread_mutex_lock(&l->lock);
        c->seq = l->next_seq++;
        if (l->tail)
                l->tail->next = c;
        else
                l->head = c;
        l->tail = c;
        l->bytes += len;
        l->n_chunks++;
        while ((l->bytes > AGENT_OUTLOG_MAX || l->n_chunks > MAX_CHUNKS) && l->head != l->tail) {
                struct chunk *old = l->head;
                l->head = old->next;
                l->bytes -= old->len;
                l->n_chunks--;
                free(old);
        }
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->lock);
        return 0;
}

void agent_outlog_finish(struct agent_outlog *l, const struct agent_exit *ex, bool deadline_killed)
{
        pthread_mutex_lock(&l->lock);
        l->ended = true;
        l->exit = *ex;
        l->deadline_killed = deadline_killed;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->lock);
}

size_t agent_outlog_bytes(struct agent_outlog *l)
{
        size_t n;
        pthread_mutex_lock(&l->lock);
        n = l->bytes;
        pthread_mutex_unlock(&l->lock);
        return n;
}

static bool client_gone(struct agent_request *r)
{
        char c;
        ssize_t n = recv(r->fd, &c, 1, MSG_DONTWAIT);
        return !(n < 0 && (errno == EAGAIN || errno == EINTR));
}

/* Send a JSON message built just before (built: the builder's result) and free it. */
static int send_owned(struct agent_request *r, int built, char **json, size_t len)
{
        int e = built < 0 ? built : agent_respond_envelope(r, 0, *json, len);
        free(*json);
        *json = NULL;
        return e;
}

/* Next chunk at or after *seq as a data event (copied out under the lock). 1 when one was
 * produced, 0 when none is pending. ended/exit report the end once everything was sent. */
static int next_event(struct agent_outlog *l, uint64_t *seq, int64_t wait_until, char **ret,
                      size_t *ret_len, bool *ret_ended, struct agent_exit *ret_exit,
                      bool *ret_deadline)
{
        struct timespec ts = {.tv_sec = wait_until / 1000,
                              .tv_nsec = (wait_until % 1000) * 1000000};
        struct chunk *c;
        int e = 0;

        pthread_mutex_lock(&l->lock);
        if (*seq >= l->next_seq && !l->ended)
                (void)pthread_cond_timedwait(&l->cond, &l->lock, &ts);
        for (c = l->head; c && c->seq < *seq; c = c->next)
                ;
        if (c) {
                *seq = c->seq + 1;
                e = cj_event_data(c->kind, c->data, c->len, ret, ret_len);
                e = e < 0 ? e : 1;
        } else if (l->ended) {
                *ret_ended = true;
                *ret_exit = l->exit;
                *ret_deadline = l->deadline_killed;
        }
        pthread_mutex_unlock(&l->lock);
        return e;
}

int agent_outlog_serve(struct agent_outlog *l, struct agent_request *r, uint32_t pid,
                       int keepalive_ms, int64_t timeout_ms)
{
        static const char *const headers[] = {"Content-Type", "application/connect+json", NULL};
        int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
        int64_t next_ka = now_ms() + keepalive_ms, next_check = now_ms() + CLIENT_CHECK_MS;
        uint64_t seq = 0;
        char *json = NULL;
        size_t len;
        int e;

        if ((e = agent_respond_head(r, 200, headers)) < 0 ||
            (e = cj_event_start(pid, &json, &len)) < 0 || (e = send_owned(r, e, &json, len)) < 0)
                return e;
        for (;;) {
                struct agent_exit ex;
                bool ended = false, deadline_killed = false;
                int64_t now = now_ms(), until = MIN(next_ka, next_check);

                if (deadline && now >= deadline)
                        return agent_respond_stream_error(r, "deadline_exceeded",
                                                          "connect timeout exceeded");
                if (deadline)
                        until = MIN(until, deadline);
                json = NULL;
                e = next_event(l, &seq, until, &json, &len, &ended, &ex, &deadline_killed);
                if (e > 0) {
                        if ((e = send_owned(r, 0, &json, len)) < 0)
                                return e;
                        next_ka = now_ms() + keepalive_ms;
                        continue;
                }
                if (e < 0)
                        return agent_respond_stream_error(r, "internal", "out of memory");
                if (ended) {
                        if (deadline_killed)
                                return agent_respond_stream_error(
                                    r, "deadline_exceeded", "process %u killed: timeout exceeded",
                                    pid);
                        if ((e = cj_event_end(&ex, &json, &len)) < 0 ||
                            (e = send_owned(r, e, &json, len)) < 0 ||
                            (e = cj_end_stream_ok(&json, &len)) < 0)
                                return e;
                        e = agent_respond_envelope(r, CONNECT_FLAG_END_STREAM, json, len);
                        free(json);
                        return e < 0 ? e : agent_respond_end(r);
                }
                now = now_ms();
                if (now >= next_check) {
                        if (client_gone(r))
                                return 0;
                        next_check = now + CLIENT_CHECK_MS;
                }
                if (now >= next_ka) {
                        if ((e = cj_event_keepalive(&json, &len)) < 0 ||
                            (e = send_owned(r, e, &json, len)) < 0)
                                return e;
                        next_ka = now_ms() + keepalive_ms;
                }
        }
}
