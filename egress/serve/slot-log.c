/* SPDX-License-Identifier: Apache-2.0 */
#include "serve/slot-log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "policy/link-addr.h"
#include "time-util.h"

struct window {
        int64_t start;     /* ms; 0: none yet */
        unsigned written;  /* lines written in this window */
        unsigned left_out; /* lines left out since the last one written */
};

struct egress_log_limit {
        struct window all;
        struct window slot[EGRESS_SLOTS_MAX];
};

int egress_log_limit_new(struct egress_log_limit **ret)
{
        *ret = calloc(1, sizeof(**ret));
        return *ret ? 0 : -ENOMEM;
}

void egress_log_limit_free(struct egress_log_limit *l)
{
        free(l);
}

static void roll(struct window *w, int64_t now)
{
        if (w->start == 0 || now - w->start >= EGRESS_LOG_WINDOW_MS) {
                w->start = now;
                w->written = 0;
        }
}

bool egress_log_admit(struct egress_log_limit *l, int slot, int64_t now, unsigned *ret_left_out)
{
        struct window *s = slot >= 0 && slot < EGRESS_SLOTS_MAX ? &l->slot[slot] : NULL;
        roll(&l->all, now);
        if (s)
                roll(s, now);
        if (l->all.written >= EGRESS_LOG_ALL || (s && s->written >= EGRESS_LOG_PER_SANDBOX)) {
                if (s)
                        s->left_out++;
                else
                        l->all.left_out++;
                return false;
        }
        l->all.written++;
        if (s)
                s->written++;
        struct window *own = s ? s : &l->all;
        *ret_left_out = own->left_out;
        own->left_out = 0;
        return true;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct egress_log_limit *limit; /* the process's, made on first use */

void egress_slot_log(enum log_level level, int slot, const char *fmt, ...)
{
        unsigned left_out = 0;
        pthread_mutex_lock(&lock);
        bool ok = limit || egress_log_limit_new(&limit) >= 0;
        ok = ok && egress_log_admit(limit, slot, now_ms(), &left_out);
        pthread_mutex_unlock(&lock);
        if (!ok)
                return;
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (left_out > 0)
                (void)log_internal(level, 0,
                                   "%s (and %u like it for this sandbox left out of the "
                                   "log since the last one: at most %d per %d s)",
                                   msg, left_out, EGRESS_LOG_PER_SANDBOX,
                                   EGRESS_LOG_WINDOW_MS / 1000);
        else
                (void)log_internal(level, 0, "%s", msg);
}
