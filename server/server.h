/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's shared state, passed to every handler. */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "server-config.h"
#include "keys.h"
#include "registry.h"

struct server {
        const struct sbxd_config *config;
        struct keys keys;
        struct registry *registry;
        pthread_t timer;
        bool timer_started;
        pthread_t monitor; /* monitor.h */
        bool monitor_started;
        int monitor_epoll, monitor_wake, monitor_sigchld;
};
