/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Lifecycle's own state in a running sbxd: its three threads (the timeout timer, the monitor,
 * the sampler), the cold-create turnstile and the warm pool. One per server (srv->lifecycle),
 * made before the first of these threads starts and freed after the last stopped; nothing
 * outside lifecycle/ reads it but through the counters named below.
 */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "core/server.h"

struct lifecycle_state {
        pthread_t timer; /* lifecycle/timer.c */
        bool timer_started;
        pthread_t monitor; /* lifecycle/monitor.h */
        bool monitor_started;
        int monitor_epoll, monitor_wake, monitor_sigchld;
        struct pool *pool;         /* lifecycle/pool.h; NULL when off */
        unsigned creates_inflight; /* under create_lock: cold creates running now */
        pthread_mutex_t create_lock;
        pthread_cond_t create_turn; /* a cold create finished: a waiting one may start */
        unsigned starting;          /* __atomic: sandboxes being created (counted in limits) */
        pthread_t sampler;          /* lifecycle/sampler.h: metrics + persist-paused thread */
        bool sampler_started;
        pthread_mutex_t sampler_lock;
        pthread_cond_t sampler_cond;
        bool stopping; /* under sampler_lock */
};

/* srv->lifecycle, before lifecycle_timer_start(); -ENOMEM. Freed after every thread stopped. */
int lifecycle_state_new(struct server *srv);
void lifecycle_state_free(struct server *srv);

/* Sandboxes being created now, and warm ones ready in the pool: for /metrics and the cluster. */
unsigned lifecycle_starting(const struct server *srv);
size_t lifecycle_pool_ready(const struct server *srv);
