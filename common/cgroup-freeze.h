/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Freezing a sandbox cgroup and reading its accounting. `name` is relative to every hierarchy
 * root ("sbx/<id>"). Freezing uses the v2 group's cgroup.freeze (on this hybrid host the
 * controller-less v2 group under /sys/fs/cgroup/unified); a frozen group's processes use no
 * CPU and are not signalled into running. Thread-safe (no state).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Write cgroup.freeze (1/0) and wait (bounded, timeout_ms) until cgroup.events says
 * "frozen 1"/"frozen 0". -ETIMEDOUT when it did not settle, -ENOENT without the group. */
int cgroup_freeze(const char *name, bool freeze, int timeout_ms);
/* Whether cgroup.freeze is 1: 1, 0, or -errno. */
int cgroup_is_frozen(const char *name);

struct cgroup_stats {
        uint64_t cpu_usage_ns; /* cumulative; v1 cpuacct.usage or v2 cpu.stat usage_usec */
        uint64_t mem_usage;    /* bytes charged (incl. tmpfs and page cache) */
        uint64_t mem_cache;    /* page cache part (file) */
        uint64_t mem_limit;
        uint64_t oom_kills; /* v1 memory.oom_control oom_kill, v2 memory.events oom_kill */
};
/* Whatever of the above the host exposes (missing values stay 0). -ENOENT without the group. */
int cgroup_read_stats(const char *name, struct cgroup_stats *ret);
