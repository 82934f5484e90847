/* SPDX-License-Identifier: Apache-2.0 */
/* Clocks. Header-only. Deadlines and durations use CLOCK_MONOTONIC; wall time is for records. */
#pragma once

#include <stdint.h>
#include <time.h>

/* Milliseconds on CLOCK_MONOTONIC (not affected by clock changes; unrelated to the epoch). */
static inline int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds since the epoch (CLOCK_REALTIME): for records that outlive the process and are
 * shown as dates (createdAt, updatedAt), never for deadlines. */
static inline int64_t wall_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The time ms milliseconds from now on clock (a negative ms counts as 0): a deadline for
 * pthread_cond_timedwait(), on the clock its condition waits on (CLOCK_REALTIME unless
 * pthread_condattr_setclock() chose another). */
static inline struct timespec timespec_in_ms(clockid_t clock, int64_t ms)
{
        struct timespec ts;
        clock_gettime(clock, &ts);
        if (ms < 0)
                ms = 0;
        ts.tv_sec += (time_t)(ms / 1000);
        ts.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        return ts;
}

/* Microseconds on CLOCK_MONOTONIC. */
static inline int64_t now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
