/* SPDX-License-Identifier: Apache-2.0 */
#include "native/native-term-session.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "random-util.h"
#include "time-util.h"

struct term_session {
        struct term_session *next;
        char id[NATIVE_TERM_ID_LEN + 1];
        pid_t pid;
        uint64_t gen;        /* the owning connection's generation */
        bool owned;          /* false once the owner's connection was lost */
        int64_t orphaned_ms; /* when it lost its owner (monotonic) */
        bool done;           /* the shell ended */
        unsigned refs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct term_session *sessions;
static unsigned n_sessions;

int term_session_new(pid_t pid, char id_out[static NATIVE_TERM_ID_LEN + 1],
                     struct term_session **ret)
{
        struct term_session *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        *s = (struct term_session){.pid = pid, .gen = 1, .owned = true, .refs = 1};
        int r = random_hex(s->id, NATIVE_TERM_ID_LEN / 2);
        pthread_mutex_lock(&lock);
        if (r >= 0 && n_sessions >= NATIVE_TERM_SESSIONS)
                r = -EBUSY;
        if (r >= 0) {
                s->next = sessions;
                sessions = s;
                n_sessions++;
        }
        pthread_mutex_unlock(&lock);
        if (r < 0) {
                free(s);
                return r;
        }
        memcpy(id_out, s->id, sizeof(s->id));
        *ret = s;
        return 0;
}

int term_session_take(const char *id, struct term_session **ret, uint64_t *ret_gen, pid_t *ret_pid)
{
        int r = -ENOENT;
        pthread_mutex_lock(&lock);
        for (struct term_session *s = sessions; s; s = s->next)
                if (!s->done && strcmp(s->id, id) == 0) {
                        s->gen++;
                        s->owned = true;
                        s->refs++;
                        *ret = s;
                        *ret_gen = s->gen;
                        *ret_pid = s->pid;
                        r = 0;
                        break;
                }
        pthread_mutex_unlock(&lock);
        return r;
}

void term_session_unref(struct term_session *s, bool creator)
{
        if (!s)
                return;
        pthread_mutex_lock(&lock);
        if (creator)
                for (struct term_session **p = &sessions; *p; p = &(*p)->next)
                        if (*p == s) {
                                *p = s->next;
                                n_sessions--;
                                break;
                        }
        bool last = --s->refs == 0;
        pthread_mutex_unlock(&lock);
        if (last)
                free(s);
}

bool term_session_owns(struct term_session *s, uint64_t gen)
{
        pthread_mutex_lock(&lock);
        bool r = s->owned && s->gen == gen;
        pthread_mutex_unlock(&lock);
        return r;
}

void term_session_detach(struct term_session *s, uint64_t gen)
{
        pthread_mutex_lock(&lock);
        if (s->owned && s->gen == gen) {
                s->owned = false;
                s->orphaned_ms = now_ms();
        }
        pthread_mutex_unlock(&lock);
}

void term_session_done(struct term_session *s)
{
        pthread_mutex_lock(&lock);
        s->done = true;
        pthread_mutex_unlock(&lock);
}

int term_session_orphan_ms(struct term_session *s)
{
        pthread_mutex_lock(&lock);
        bool owned = s->owned;
        int64_t left = s->orphaned_ms + NATIVE_TERM_DETACH_MS - now_ms();
        pthread_mutex_unlock(&lock);
        if (owned)
                return -1;
        return left > 0 ? (int)left : 0;
}
