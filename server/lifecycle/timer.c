/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The timeout thread (lifecycle_timer_start(), declared in lifecycle/lifecycle.h): kills each
 * sandbox whose endAt passed, or pauses it when it asked for onTimeout "pause".
 */
#include "lifecycle/lifecycle.h"
#include "lifecycle/lifecycle-state.h"

#include <errno.h>
#include <pthread.h>

#include "log.h"

static void *timer_main(void *arg)
{
        struct server *srv = arg;
        struct sandbox *s;
        bool pause;
        while ((s = registry_wait_expired(srv->registry, &pause))) {
                log_context_set(NULL, s->id);
                if (!pause) {
                        lifecycle_destroy(srv, s, "timeout");
                        log_context_set(NULL, NULL);
                        continue;
                }
                /* onTimeout "pause": freeze; a sandbox that cannot be frozen is killed */
                int r = lifecycle_pause_expired(srv, s);
                if (r < 0) {
                        log_warning_errno(r, "sandbox %s: auto-pause failed, killing: %m", s->id);
                        lifecycle_kill(srv, s->id);
                }
                log_context_set(NULL, NULL);
                sandbox_unref(s);
        }
        return NULL;
}

int lifecycle_timer_start(struct server *srv)
{
        int r = pthread_create(&srv->lifecycle->timer, NULL, timer_main, srv);
        if (r != 0)
                return -r;
        srv->lifecycle->timer_started = true;
        return 0;
}

void lifecycle_timer_stop(struct server *srv)
{
        registry_shutdown(srv->registry);
        if (srv->lifecycle->timer_started)
                pthread_join(srv->lifecycle->timer, NULL);
        srv->lifecycle->timer_started = false;
}
