/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper: a thread standing in for PID 1 (core/init.c), the only code that waits for
 * children: every 2 ms it hands exited children to the process table (agent_proc_on_exit(),
 * which ignores pids it does not know) and enforces deadlines. Header-only, static.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#include "proc/process.h"

struct test_reaper {
        pthread_t thread;
        atomic_int stop;
};

static inline void *test_reaper_main(void *arg)
{
        struct test_reaper *r = arg;
        while (!atomic_load(&r->stop)) {
                siginfo_t si = {0};
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) == 0 && si.si_pid > 0) {
                        agent_proc_on_exit(si.si_pid, si.si_code, si.si_status);
                        continue;
                }
                (void)agent_proc_enforce_deadlines();
                struct timespec ts = {0, 2 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        return NULL;
}

static inline void test_reaper_start(struct test_reaper *r)
{
        atomic_store(&r->stop, 0);
        pthread_create(&r->thread, NULL, test_reaper_main, r);
}

static inline void test_reaper_stop(struct test_reaper *r)
{
        atomic_store(&r->stop, 1);
        pthread_join(r->thread, NULL);
}
