/* SPDX-License-Identifier: Apache-2.0 */
/* The control channel of sbx-egress as either end uses it (egress-chan.h). */
#include "egress-chan.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "fd-util.h"
#include "macros.h"
#include "time-util.h"

/* A caller waiting for its answer. */
struct waiter {
        uint32_t id;
        bool done;
        struct egress_msg answer;
        pthread_cond_t cond;
        struct waiter *next;
};

struct egress_chan {
        int sock;
        pthread_mutex_t send_lock; /* one message at a time on the socket */
        pthread_mutex_t lock;      /* everything below */
        uint32_t next_id;
        bool closed;
        struct waiter *waiting;
};

int egress_chan_new(int sock, struct egress_chan **ret)
{
        struct egress_chan *c = calloc(1, sizeof(*c));
        if (!c) {
                safe_close(sock);
                return -ENOMEM;
        }
        c->sock = sock;
        c->next_id = 1;
        pthread_mutex_init(&c->send_lock, NULL);
        pthread_mutex_init(&c->lock, NULL);
        *ret = c;
        return 0;
}

void egress_chan_free(struct egress_chan *c)
{
        if (!c)
                return;
        safe_close(c->sock);
        pthread_mutex_destroy(&c->send_lock);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

int egress_chan_send(struct egress_chan *c, const struct egress_msg *m)
{
        pthread_mutex_lock(&c->send_lock);
        int r = egress_msg_send(c->sock, m);
        pthread_mutex_unlock(&c->send_lock);
        return r;
}

void egress_chan_shutdown(struct egress_chan *c)
{
        (void)shutdown(c->sock, SHUT_RDWR);
}

/* Takes w out of the list. Under c->lock. */
static void unlink_waiter(struct egress_chan *c, struct waiter *w)
{
        for (struct waiter **p = &c->waiting; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        return;
                }
}

int egress_chan_call(struct egress_chan *c, struct egress_msg *req, struct egress_msg *ret)
{
        struct waiter *w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_lock(&c->lock);
        int r = c->closed ? -EPIPE : 0;
        if (r >= 0) {
                w->id = c->next_id++;
                if (c->next_id == 0) /* 0 is "no answer wanted" */
                        c->next_id = 1;
                w->next = c->waiting;
                c->waiting = w;
        }
        pthread_mutex_unlock(&c->lock);
        req->id = w->id;
        if (r >= 0 && (r = egress_chan_send(c, req)) < 0) {
                pthread_mutex_lock(&c->lock);
                unlink_waiter(c, w);
                pthread_mutex_unlock(&c->lock);
        }
        if (r >= 0) {
                struct timespec until = timespec_in_ms(CLOCK_MONOTONIC, EGRESS_CHAN_CALL_MS);
                pthread_mutex_lock(&c->lock);
                while (!w->done && !c->closed && r >= 0)
                        if (pthread_cond_timedwait(&w->cond, &c->lock, &until) == ETIMEDOUT)
                                r = -ETIMEDOUT;
                if (!w->done) {
                        unlink_waiter(c, w);
                        if (r >= 0)
                                r = -EPIPE;
                }
                pthread_mutex_unlock(&c->lock);
        }
        pthread_cond_destroy(&w->cond);
        if (r >= 0)
                *ret = w->answer;
        else
                egress_msg_done(&w->answer);
        free(w);
        return r;
}

/* An answer to one of our calls: to its waiter, or dropped when it gave up already. */
static void deliver(struct egress_chan *c, struct egress_msg *m)
{
        pthread_mutex_lock(&c->lock);
        struct waiter *w = c->waiting;
        while (w && w->id != m->id)
                w = w->next;
        if (w) {
                unlink_waiter(c, w);
                w->answer = *m;
                *m = (struct egress_msg){};
                w->done = true;
                pthread_cond_signal(&w->cond);
        }
        pthread_mutex_unlock(&c->lock);
}

/* A request of the peer: handled, then answered when it asked for an answer. */
static int handle(struct egress_chan *c, struct egress_msg *m, egress_chan_handler_fn handler,
                  void *arg)
{
        char *value = NULL;
        enum egress_msg_type type = m->type;
        uint32_t id = m->id;
        int err = handler(arg, m, &value);
        if (id == 0) {
                free(value);
                return 0;
        }
        struct egress_msg a = {.type =
                                   type == EGRESS_MSG_SECRET ? EGRESS_MSG_VALUE : EGRESS_MSG_ACK,
                               .id = id,
                               .error = MIN(err, 0),
                               .text = err >= 0 ? value : NULL};
        if (a.type == EGRESS_MSG_VALUE && err >= 0 && !value)
                a.error = -EIO;
        int r = egress_chan_send(c, &a);
        if (value) {
                explicit_bzero(value, strlen(value));
                free(value);
        }
        return r;
}

int egress_chan_run(struct egress_chan *c, egress_chan_handler_fn handler, void *arg,
                    const char **ret_why)
{
        int r;
        *ret_why = "";
        for (;;) {
                struct egress_msg m;
                r = egress_msg_recv(c->sock, &m, ret_why);
                if (r <= 0)
                        break;
                if (m.type == EGRESS_MSG_ACK || m.type == EGRESS_MSG_VALUE)
                        deliver(c, &m);
                else
                        r = handle(c, &m, handler, arg);
                egress_msg_done(&m);
                if (r < 0 && r != -EPIPE)
                        break;
        }
        pthread_mutex_lock(&c->lock);
        c->closed = true;
        for (struct waiter *w = c->waiting; w; w = w->next)
                pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&c->lock);
        return r == -EPIPE ? 0 : r;
}
