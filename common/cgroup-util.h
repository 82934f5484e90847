/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Destroying a sandbox's cgroup (the jailer creates it; jailer/README.md "Teardown"). `name` is
 * the spec's "cgroup" field, relative to every hierarchy root, e.g. "sbx/<id>". Works on the
 * v1+v2 hybrid layout (v2 at /sys/fs/cgroup/unified) and on pure v2 (/sys/fs/cgroup). Every
 * function is idempotent: a cgroup that does not exist counts as done. Thread-safe (no state).
 */
#pragma once

#include <stdint.h>

/* The v2 directory of name: <v2 mount>/<name>. Caller frees. -ENOENT without a v2 hierarchy. */
int cgroup_v2_path(const char *name, char **ret_path);

/* SIGKILLs every process in the v2 group: cgroup.kill (Linux 5.14+), else freeze + kill each
 * pid in cgroup.procs + thaw. */
int cgroup_kill(const char *name);

/* Waits until the v2 group's cgroup.events says "populated 0" (poll on POLLPRI). -ETIMEDOUT
 * after timeout_ms (< 0: forever). */
int cgroup_wait_empty(const char *name, int timeout_ms);

/* rmdir of <root>/<name> in every mounted cgroup hierarchy (v1 and v2), descendants first.
 * -EBUSY if a group still has processes. */
int cgroup_remove(const char *name);

/* kill + wait_empty(timeout_ms) + remove: what sbxd calls to destroy a sandbox. */
int cgroup_destroy(const char *name, int timeout_ms);

/* Create name (one level below every hierarchy root) where missing and cap it: memory (v1
 * memory.limit_in_bytes and memsw where accounted, v2 memory.max) and tasks (pids.max), in
 * every hierarchy that has the knob; on pure v2 the memory and pids controllers are enabled in
 * the root's subtree first. The aggregate of every cgroup below it. Returns the number of
 * knobs written (0: no hierarchy had them), or -errno. */
int cgroup_limit_parent(const char *name, uint64_t memory_bytes, uint64_t pids_max);
