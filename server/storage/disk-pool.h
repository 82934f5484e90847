/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The storage pool: one btrfs file system per sbxd that holds every sandbox's writable layer
 * (overlay upper and work dirs) as a subvolume of its own, limited by a qgroup to the
 * sandbox's diskSizeMB, and every snapshot as a read-only subvolume (server/storage/README.md
 * "Thin storage").
 *
 * Where it lives: <state>/pool. When the state dir is on btrfs, that is a subvolume of the
 * state dir's own file system; otherwise it is the mount point of a btrfs file system made in
 * one preallocated image, <state>/pool.img, on one loop device (direct I/O, so the host does
 * not cache each page twice; nodiscard, so the image keeps every block it was given), mounted
 * once, nosuid,nodev,noatime, and kept mounted while any sandbox dir exists.
 *
 * Why writes are never lost: btrfs reserves data space (and the qgroup's share of it) when
 * write() is made, so a sandbox past its limit gets EDQUOT and a full pool gets ENOSPC from
 * the write itself, before anything is acknowledged; the pool image's blocks are reserved on
 * the host disk at creation (fallocate), so the loop device under it never meets a full host
 * disk. Admission therefore no longer adds promised sizes up: a new sandbox is admitted while
 * the pool's free space exceeds the reserve.
 *
 * Ids on disk. A sandbox's upper is mounted through an idmapped bind of its subvolume, so files
 * are stored with the ids the sandbox sees (0 for its root, 1000 for its user), as store layers
 * and volumes are: a snapshot is a valid lower layer or a valid upper for any sandbox, whatever
 * its uid slot. The pool is nosuid,nodev and under the 0700 state dir, so a set-id file there
 * is inert on the host.
 *
 * Every call below is a few ioctls (BTRFS_IOC_SUBVOL_CREATE_V2, SNAP_CREATE_V2, SNAP_DESTROY_V2,
 * QGROUP_LIMIT, TREE_SEARCH on the quota tree); only the pool's creation execs mkfs.btrfs.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/server-config.h"

#define DISK_POOL_DIR       "pool"     /* <state>/pool */
#define DISK_POOL_IMAGE     "pool.img" /* <state>/pool.img, when the state dir is not btrfs */
#define DISK_POOL_SANDBOXES "sandboxes"
#define DISK_POOL_SNAPSHOTS "snapshots"
/* --storage-pool bounds, and the default: a quarter of the state file system's free space at
 * the pool's creation, within [DISK_POOL_DEFAULT_MIN, DISK_POOL_DEFAULT_MAX], whole GiB. */
#define DISK_POOL_MIN_BYTES   SBXD_STORAGE_POOL_MIN
#define DISK_POOL_MAX_BYTES   SBXD_STORAGE_POOL_MAX
#define DISK_POOL_DEFAULT_PCT 25
#define DISK_POOL_DEFAULT_MIN (2ULL << 30)
#define DISK_POOL_DEFAULT_MAX (256ULL << 30)
/* A sandbox id or snapshot name as a subvolume name. */
#define DISK_POOL_NAME_MAX 64

struct disk_pool;

/* Whether this kernel has btrfs (and, for an image pool, mkfs.btrfs is installed): checked
 * without side effects. false with a reason in why. */
bool disk_pool_available(const char *state_dir, char *why, size_t whylen);

/* Open (create, format, mount as needed) the pool of state_dir. size_bytes: the image's size
 * when one is made or grown (0: the default above, or the existing image's size). Quotas are
 * enabled and checked with a probe subvolume. Logs what it did once. Call before any child is
 * reaped by someone else (it waits for mkfs). */
int disk_pool_open(const char *state_dir, uint64_t size_bytes, struct disk_pool **ret);

/* Close the pool; unmount it (and detach its loop device) when it is an image pool and no
 * sandbox dir remains under <state>/sandboxes. */
void disk_pool_close(struct disk_pool *p, bool unmount_if_idle);

/* "image" (a pool.img of its own) or "state-dir" (the state dir's btrfs). */
const char *disk_pool_kind(const struct disk_pool *p);
const char *disk_pool_root(const struct disk_pool *p);

/* <pool>/sandboxes/<id> into buf. */
int disk_pool_upper_path(const struct disk_pool *p, const char *id, char *buf, size_t len);
/* Whether sandbox id has a subvolume in the pool. */
bool disk_pool_has_upper(const struct disk_pool *p, const char *id);

/* A new subvolume <pool>/sandboxes/<id> limited to limit_bytes (referenced bytes, metadata
 * included), holding upper/ (0755), work/ and lower/ (0700), all owned by on-disk 0: an empty
 * subvolume, or a writable snapshot of the snapshot seed (an absolute path under
 * <pool>/snapshots) when seed is not NULL. -EEXIST when it exists. */
int disk_pool_upper_create(struct disk_pool *p, const char *id, uint64_t limit_bytes,
                           const char *seed);
/* Delete sandbox id's subvolume (gone already is fine). */
int disk_pool_upper_remove(struct disk_pool *p, const char *id);

/* A read-only snapshot of sandbox id's subvolume at <pool>/snapshots/<name>; its path in
 * ret_path. O(1): nothing is copied. */
int disk_pool_snapshot(struct disk_pool *p, const char *id, const char *name, char *ret_path,
                       size_t len);
/* <pool>/snapshots/<name> into buf. */
int disk_pool_snapshot_path(const struct disk_pool *p, const char *name, char *buf, size_t len);
int disk_pool_snapshot_remove(struct disk_pool *p, const char *name);
/* Names under <pool>/snapshots (or <pool>/sandboxes), for gc: *ret is a NULL-terminated array
 * (free each, then it); returns how many. */
int disk_pool_list(const struct disk_pool *p, bool snapshots, char ***ret);

struct disk_pool_space {
        uint64_t size;        /* the pool file system's size */
        uint64_t free;        /* what new data can still take (statvfs f_bavail) */
        uint64_t used;        /* size - free */
        uint64_t image_bytes; /* the image file's size; 0 for a state-dir pool */
};
int disk_pool_space(const struct disk_pool *p, struct disk_pool_space *ret);

/* A sandbox's usage: referenced bytes (what its disk holds, shared extents included: what the
 * limit counts) and exclusive bytes (what deleting it would free), as of the last commit plus
 * the data reserved by writes since; its limit (0: none). */
struct disk_pool_use {
        uint64_t referenced, exclusive, limit;
};
int disk_pool_upper_usage(const struct disk_pool *p, const char *id, struct disk_pool_use *ret);

/* Grow an image pool to new_bytes (preallocated on the host first; the loop device and the file
 * system follow) while sandboxes run. -EINVAL when not larger, -EOPNOTSUPP for a state-dir pool,
 * -ENOSPC when the host cannot hold it. */
int disk_pool_grow(struct disk_pool *p, uint64_t new_bytes);

/* Preallocate the image's blocks again (a host fstrim through the loop device may have
 * punched some out): cheap when nothing is missing. No-op for a state-dir pool. */
int disk_pool_keep_reserved(struct disk_pool *p);
