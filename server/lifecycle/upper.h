/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's writable layer: where it lives on the host, making it in the storage pool
 * (storage/disk-pool.h) with the pool's admission, and reading it into the layer store.
 *
 * A sandbox started with the pool has its upper in <pool>/sandboxes/<id> (files with the ids
 * the sandbox sees); one started before the pool, or without it, has it at <dir>/rootfs/upper
 * (an ext4 image or a tmpfs mounted there, files with host ids of its uid slot). Both kinds run
 * side by side in one sbxd: a state dir made before the pool keeps its sandboxes on their
 * images until they end.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "core/server.h"
#include "lifecycle/sandbox.h"

/* Whether s's upper is a pool subvolume. */
bool lifecycle_upper_in_pool(const struct server *srv, const struct sandbox *s);

/* s's upper in the pool: kept when it exists (a resume), else made, empty or as a writable
 * snapshot of s->upper_seed, limited to s's disk size, once the pool's free space is above
 * the reserve: -ENOSPC (507) with errmsg otherwise. */
int lifecycle_upper_make(struct server *srv, struct sandbox *s, char *errmsg, size_t errlen);

/* The upper dir of s on the host and the host id that is id 0 in it. */
int lifecycle_upper_dir(const struct server *srv, const struct sandbox *s, char *buf, size_t len,
                        uid_t *ret_base);

/* s's upper as a store layer (a copy, hashed): for a layer that leaves this node (cluster
 * moves and pulls), a build step, and the image fallback's persist and snapshots. The caller
 * keeps it still (frozen, paused or persisted) and holds the store's read lock. */
int lifecycle_upper_ingest(struct server *srv, const struct sandbox *s, char *ret_hex);

/* At start, after adoption: delete pool subvolumes no sandbox dir and no template names (left
 * by a crash between a subvolume and its record). Returns how many went. */
int lifecycle_upper_gc(struct server *srv);
