/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/registry.h"

#include <errno.h>
#include <pthread.h>
#include <sys/types.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/host-claim.h"
#include "macros.h"

/* slots[]: free, ours, or held by another sbxd of the host when we last tried it (skipped
 * until a full pass finds nothing else) */
enum { SLOT_FREE, SLOT_OURS, SLOT_FOREIGN };

struct registry {
        pthread_mutex_t lock;
        pthread_cond_t changed; /* table or a deadline changed, or shutdown */
        struct sandbox **items;
        size_t n, cap;
        unsigned char slots[REGISTRY_MAX_SLOTS];
        uint64_t next_serial;
        bool shutdown;
        struct host_claims *host; /* NULL: slots are this process's alone (unit tests) */
};

void registry_set_host(struct registry *r, struct host_claims *h)
{
        r->host = h;
}

int registry_new(struct registry **ret)
{
        struct registry *r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->changed, NULL);
        *ret = r;
        return 0;
}

void registry_free(struct registry *r)
{
        if (!r)
                return;
        for (size_t i = 0; i < r->n; i++)
                sandbox_unref(r->items[i]);
        free(r->items);
        pthread_cond_destroy(&r->changed);
        pthread_mutex_destroy(&r->lock);
        free(r);
}

/* The first free slot from from on, marked ours, skipping those another sbxd held last time
 * (unless skip_foreign is false); -EUSERS when none. */
static int pick(struct registry *r, bool skip_foreign, int from)
{
        int found = -EUSERS;
        pthread_mutex_lock(&r->lock);
        for (int i = from; i < REGISTRY_MAX_SLOTS && found < 0; i++)
                if (r->slots[i] == SLOT_FREE || (!skip_foreign && r->slots[i] == SLOT_FOREIGN)) {
                        r->slots[i] = SLOT_OURS;
                        found = i;
                }
        pthread_mutex_unlock(&r->lock);
        return found;
}

static void mark(struct registry *r, int slot, unsigned char how)
{
        pthread_mutex_lock(&r->lock);
        r->slots[slot] = how;
        pthread_mutex_unlock(&r->lock);
}

int registry_slot_acquire(struct registry *r, int *ret_slot)
{
        /* the host-wide claim outside the lock (I/O): a slot another sbxd holds is skipped */
        for (int pass = 0; pass < 2; pass++)
                for (int slot = -1; (slot = pick(r, pass == 0, slot + 1)) >= 0;) {
                        int c = r->host ? host_slot_claim(r->host, slot) : 0;
                        if (c >= 0) {
                                *ret_slot = slot;
                                return 0;
                        }
                        mark(r, slot, c == -EBUSY ? SLOT_FOREIGN : SLOT_FREE);
                        if (c != -EBUSY)
                                return c;
                }
        return -EUSERS;
}

int registry_slot_reserve(struct registry *r, int slot)
{
        int ret = 0;
        if (slot < 0 || slot >= REGISTRY_MAX_SLOTS)
                return -ERANGE;
        pthread_mutex_lock(&r->lock);
        if (r->slots[slot] == SLOT_OURS)
                ret = -EBUSY;
        else
                r->slots[slot] = SLOT_OURS;
        pthread_mutex_unlock(&r->lock);
        int c = ret >= 0 && r->host ? host_slot_claim(r->host, slot) : 0;
        if (c < 0) {
                mark(r, slot, c == -EBUSY ? SLOT_FOREIGN : SLOT_FREE);
                ret = c;
        }
        return ret;
}

void registry_slot_release(struct registry *r, int slot)
{
        if (slot < 0 || slot >= REGISTRY_MAX_SLOTS)
                return;
        if (r->host)
                host_slot_release(r->host, slot);
        mark(r, slot, SLOT_FREE);
}

int registry_slot_sweep(struct registry *r)
{
        if (!r->host)
                return 0;
        bool *in_use = calloc(REGISTRY_MAX_SLOTS, sizeof(bool));
        if (!in_use)
                return -ENOMEM;
        pthread_mutex_lock(&r->lock);
        for (int i = 0; i < REGISTRY_MAX_SLOTS; i++)
                in_use[i] = r->slots[i] == SLOT_OURS;
        pthread_mutex_unlock(&r->lock);
        int n = host_slot_sweep(r->host, in_use, REGISTRY_MAX_SLOTS);
        free(in_use);
        return n;
}

static ssize_t find_locked(struct registry *r, const char *id)
{
        for (size_t i = 0; i < r->n; i++)
                if (strcmp(r->items[i]->id, id) == 0)
                        return (ssize_t)i;
        return -1;
}

int registry_add(struct registry *r, struct sandbox *s)
{
        int ret = 0;
        pthread_mutex_lock(&r->lock);
        if (find_locked(r, s->id) >= 0) {
                ret = -EEXIST;
        } else if (r->n == r->cap) {
                size_t cap = MAX(r->cap * 2, (size_t)16);
                struct sandbox **n = realloc(r->items, cap * sizeof(*n));
                if (!n)
                        ret = -ENOMEM;
                else {
                        r->items = n;
                        r->cap = cap;
                }
        }
        if (ret == 0) {
                s->serial = ++r->next_serial;
                r->items[r->n++] = sandbox_ref(s);
                pthread_cond_broadcast(&r->changed);
        }
        pthread_mutex_unlock(&r->lock);
        return ret;
}

struct sandbox *registry_get(struct registry *r, const char *id)
{
        struct sandbox *s = NULL;
        pthread_mutex_lock(&r->lock);
        ssize_t i = find_locked(r, id);
        if (i >= 0)
                s = sandbox_ref(r->items[i]);
        pthread_mutex_unlock(&r->lock);
        return s;
}

static struct sandbox *remove_locked(struct registry *r, size_t i)
{
        struct sandbox *s = r->items[i];
        r->items[i] = r->items[--r->n];
        return s;
}

struct sandbox *registry_take(struct registry *r, const char *id)
{
        struct sandbox *s = NULL;
        pthread_mutex_lock(&r->lock);
        ssize_t i = find_locked(r, id);
        if (i >= 0)
                s = remove_locked(r, (size_t)i);
        pthread_mutex_unlock(&r->lock);
        return s;
}

struct sandbox *registry_take_serial(struct registry *r, uint64_t serial)
{
        struct sandbox *s = NULL;
        pthread_mutex_lock(&r->lock);
        for (size_t i = 0; i < r->n; i++)
                if (r->items[i]->serial == serial) {
                        s = remove_locked(r, i);
                        break;
                }
        pthread_mutex_unlock(&r->lock);
        return s;
}

void registry_set_end_at(struct registry *r, struct sandbox *s, int64_t end_at, bool extend_only)
{
        pthread_mutex_lock(&r->lock);
        if (!extend_only || end_at > sandbox_get_end_at(s))
                sandbox_set_end_at(s, end_at);
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
}

static int cmp_started(const void *a, const void *b)
{
        const struct sandbox *x = *(struct sandbox *const *)a, *y = *(struct sandbox *const *)b;
        if (x->started_us != y->started_us)
                return x->started_us < y->started_us ? -1 : 1;
        return strcmp(x->id, y->id);
}

int registry_list(struct registry *r, struct sandbox ***ret, size_t *ret_n)
{
        pthread_mutex_lock(&r->lock);
        struct sandbox **v = calloc(r->n ? r->n : 1, sizeof(*v));
        if (!v) {
                pthread_mutex_unlock(&r->lock);
                return -ENOMEM;
        }
        size_t n = r->n;
        for (size_t i = 0; i < n; i++)
                v[i] = sandbox_ref(r->items[i]);
        pthread_mutex_unlock(&r->lock);
        qsort(v, n, sizeof(*v), cmp_started);
        *ret = v;
        *ret_n = n;
        return 0;
}

size_t registry_count(struct registry *r)
{
        pthread_mutex_lock(&r->lock);
        size_t n = r->n;
        pthread_mutex_unlock(&r->lock);
        return n;
}

void registry_wake(struct registry *r)
{
        pthread_mutex_lock(&r->lock);
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
}

struct sandbox *registry_wait_expired(struct registry *r, bool *ret_pause)
{
        struct sandbox *s = NULL;
        *ret_pause = false;
        pthread_mutex_lock(&r->lock);
        while (!r->shutdown) {
                int64_t now = (int64_t)time(NULL), next = INT64_MAX;
                ssize_t hit = -1;
                for (size_t i = 0; i < r->n; i++) {
                        if (sandbox_is_paused(r->items[i]))
                                continue;
                        int64_t e = sandbox_get_end_at(r->items[i]);
                        if (e <= now) {
                                hit = (ssize_t)i;
                                break;
                        }
                        next = MIN(next, e);
                }
                if (hit >= 0 && r->items[hit]->auto_pause) {
                        s = sandbox_ref(r->items[hit]);
                        sandbox_set_paused(s, true); /* skipped from now on */
                        *ret_pause = true;
                        break;
                }
                if (hit >= 0) {
                        s = remove_locked(r, (size_t)hit);
                        break;
                }
                if (next == INT64_MAX) {
                        pthread_cond_wait(&r->changed, &r->lock);
                } else {
                        struct timespec ts = {.tv_sec = (time_t)next};
                        pthread_cond_timedwait(&r->changed, &r->lock, &ts);
                }
        }
        pthread_mutex_unlock(&r->lock);
        return s;
}

void registry_shutdown(struct registry *r)
{
        pthread_mutex_lock(&r->lock);
        r->shutdown = true;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
}
