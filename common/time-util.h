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

/* Microseconds on CLOCK_MONOTONIC. */
static inline int64_t now_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
