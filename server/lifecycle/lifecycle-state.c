/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/lifecycle-state.h"

#include <errno.h>
#include <stdlib.h>

#include "lifecycle/pool.h"

int lifecycle_state_new(struct server *srv)
{
        struct lifecycle_state *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->monitor_epoll = l->monitor_wake = l->monitor_sigchld = -EBADF;
        pthread_mutex_init(&l->create_lock, NULL);
        pthread_cond_init(&l->create_turn, NULL);
        pthread_mutex_init(&l->sampler_lock, NULL);
        pthread_cond_init(&l->sampler_cond, NULL);
        srv->lifecycle = l;
        return 0;
}

void lifecycle_state_free(struct server *srv)
{
        struct lifecycle_state *l = srv->lifecycle;
        if (!l)
                return;
        pthread_mutex_destroy(&l->create_lock);
        pthread_cond_destroy(&l->create_turn);
        pthread_mutex_destroy(&l->sampler_lock);
        pthread_cond_destroy(&l->sampler_cond);
        free(l);
        srv->lifecycle = NULL;
}

unsigned lifecycle_starting(const struct server *srv)
{
        return srv->lifecycle ? __atomic_load_n(&srv->lifecycle->starting, __ATOMIC_RELAXED) : 0;
}

size_t lifecycle_pool_ready(const struct server *srv)
{
        return srv->lifecycle && srv->lifecycle->pool ? pool_count(srv->lifecycle->pool) : 0;
}
