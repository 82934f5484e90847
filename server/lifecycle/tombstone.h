/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tombstones: why recently removed sandboxes went (OOM kill, agent exit, paused too long), so a
 * GET of one answers "was killed: it ran out of memory" instead of a bare 404. The last
 * TOMBSTONES removals are kept, in memory.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "lifecycle/sandbox.h"

/* Whether s's memory cgroup saw an OOM kill (read before teardown removes it). */
bool sandbox_oom_killed(const struct sandbox *s);
void tombstone_add(const char *id, const char *reason);
/* Copies the reason (size bytes) and returns 1 when id is a recent tombstone. */
int tombstone_get(const char *id, char *reason, size_t size);
