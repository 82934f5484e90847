/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbxd's own counters for the Prometheus endpoint (GET /metrics, text format 0.0.4): creates
 * (pool / cold), create errors, 429 refusals, a create-latency histogram, proxy bytes, API
 * errors by class, pauses/resumes, snapshots, OOM kills. Process-wide atomics, no locks.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct server;

void stats_observe_create(int64_t us, bool pooled);
void stats_count_create_error(void);
void stats_count_rejected(void);
void stats_count_proxy_bytes(uint64_t in, uint64_t out);
void stats_count_http_error(unsigned status);
void stats_count_pause(void);
void stats_count_resume(void);
void stats_count_snapshot(void);
void stats_count_oom(void);
void stats_count_disk_refused(void);

/* The exposition text (sandboxes by state read from the registry); caller frees. */
/* Sandboxes by state, counted by the caller (the registry and the pool are not ours). */
struct stats_gauges {
        size_t running, paused, pool, starting;
        /* the state disk (storage/disk-image.h): free, promised to sandbox disks, used by them,
         * and the reserve */
        uint64_t disk_free, disk_promised, disk_used, disk_reserve;
};
int stats_render(const struct stats_gauges *g, char **ret, size_t *ret_len);
