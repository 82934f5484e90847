/* SPDX-License-Identifier: Apache-2.0 */
#include "proc/outlog.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macros.h"

struct chunk {
        struct chunk *next;
        uint64_t seq;
        enum agent_output_stream stream;
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

int agent_outlog_append(struct agent_outlog *l, enum agent_output_stream stream, const uint8_t *buf,
                        size_t len)
{
        struct chunk *c = malloc(sizeof(*c) + len);

        if (!c)
                return -ENOMEM;
        c->next = NULL;
        c->stream = stream;
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
        while ((l->bytes > AGENT_OUTLOG_MAX || l->n_chunks > AGENT_OUTLOG_MAX_CHUNKS) &&
               l->head != l->tail) {
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

int agent_outlog_next(struct agent_outlog *l, uint64_t *seq, int64_t wait_until_ms,
                      struct agent_outlog_item *ret)
{
        struct timespec ts = {.tv_sec = wait_until_ms / 1000,
                              .tv_nsec = (wait_until_ms % 1000) * 1000000};
        struct chunk *c;
        int e = 0;

        *ret = (struct agent_outlog_item){.kind = AGENT_OUTLOG_NONE};
        pthread_mutex_lock(&l->lock);
        if (*seq >= l->next_seq && !l->ended)
                (void)pthread_cond_timedwait(&l->cond, &l->lock, &ts);
        for (c = l->head; c && c->seq < *seq; c = c->next)
                ;
        if (c) {
                /* Copied out: the reader sends it without holding the lock, so a slow reader
                 * never blocks the pump that appends. */
                ret->data = malloc(c->len ? c->len : 1);
                if (ret->data) {
                        memcpy(ret->data, c->data, c->len);
                        ret->kind = AGENT_OUTLOG_CHUNK;
                        ret->stream = c->stream;
                        ret->len = c->len;
                        *seq = c->seq + 1;
                } else
                        e = -ENOMEM;
        } else if (l->ended) {
                ret->kind = AGENT_OUTLOG_END;
                ret->exit = l->exit;
                ret->deadline_killed = l->deadline_killed;
        }
        pthread_mutex_unlock(&l->lock);
        return e;
}
