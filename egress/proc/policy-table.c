/* SPDX-License-Identifier: Apache-2.0 */
#include "proc/policy-table.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "policy/link-addr.h"

struct policy_table {
        pthread_rwlock_t lock;
        struct net_policy *by_slot[EGRESS_SLOTS_MAX]; /* NULL: none */
};

int policy_table_new(struct policy_table **ret)
{
        struct policy_table *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        pthread_rwlock_init(&t->lock, NULL);
        *ret = t;
        return 0;
}

void policy_table_free(struct policy_table *t)
{
        if (!t)
                return;
        for (size_t i = 0; i < EGRESS_SLOTS_MAX; i++)
                net_policy_free(t->by_slot[i]);
        pthread_rwlock_destroy(&t->lock);
        free(t);
}

int policy_table_set(struct policy_table *t, int slot, const cJSON *record)
{
        if (slot < 0 || slot >= EGRESS_SLOTS_MAX)
                return -ERANGE;
        struct net_policy *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        int r = net_policy_from_record(record, p);
        if (r < 0) {
                free(p);
                return r;
        }
        pthread_rwlock_wrlock(&t->lock);
        struct net_policy *old = t->by_slot[slot];
        t->by_slot[slot] = p;
        pthread_rwlock_unlock(&t->lock);
        net_policy_free(old);
        return 0;
}

void policy_table_forget(struct policy_table *t, int slot)
{
        if (slot < 0 || slot >= EGRESS_SLOTS_MAX)
                return;
        pthread_rwlock_wrlock(&t->lock);
        struct net_policy *old = t->by_slot[slot];
        t->by_slot[slot] = NULL;
        pthread_rwlock_unlock(&t->lock);
        net_policy_free(old);
}

int policy_table_lookup(struct policy_table *t, int family, const void *addr,
                        struct net_policy *ret)
{
        int slot = egress_slot_of(family, addr);
        if (slot < 0)
                return -1;
        pthread_rwlock_rdlock(&t->lock);
        const struct net_policy *p = t->by_slot[slot];
        int r = p && net_policy_copy(p, ret) >= 0 ? slot : -1;
        pthread_rwlock_unlock(&t->lock);
        return r;
}
