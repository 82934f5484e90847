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
void stats_count_egress_restart(void);  /* server/egress/egress-proc.h */
void stats_count_egress_restored(void); /* server/egress/egress.c's watch */

/* The front door (front/gate.h): what happened to connections, and how many wait for their
 * head / are in a request now (gauges, set by the gate's thread). */
enum stats_conn {
        STATS_CONN_ACCEPTED,
        STATS_CONN_HANDED,          /* a whole head: handed to libmicrohttpd */
        STATS_CONN_REFUSED_FRAMING, /* 400/431/501 by the gate */
        STATS_CONN_REFUSED_BUSY,    /* 503 */
        STATS_CONN_EVICTED,         /* oldest waiting one, closed to make room */
        STATS_CONN_LATE_HEAD,       /* no whole head within the deadline */
        STATS_CONN_CUT_IDLE,        /* keep-alive idle */
        STATS_CONN_CUT_HEAD,        /* a later request's head too slow */
        STATS_CONN_CUT_BODY,        /* a body too slow */
        STATS_CONN_MAX_,
};
void stats_count_conn(enum stats_conn e);
uint64_t stats_conn(enum stats_conn e);
void stats_set_connections(unsigned waiting, unsigned active);

/* The exposition text (sandboxes by state read from the registry); caller frees. */
/* Sandboxes by state, counted by the caller (the registry and the pool are not ours). */
struct stats_gauges {
        size_t running, paused, pool, starting;
        /* the state disk (storage/disk-image.h): free, promised to sandbox disks, used by them,
         * and the reserve */
        uint64_t disk_free, disk_promised, disk_used, disk_reserve;
        /* what holds sandbox disks: "pool", "image" or "tmpfs"; with the pool, its size, free
         * and used bytes, and the sandboxes' referenced and exclusive bytes summed */
        const char *disk_backend;
        uint64_t pool_size, pool_free, pool_used, pool_referenced, pool_exclusive;
};
int stats_render(const struct stats_gauges *g, char **ret, size_t *ret_len);
