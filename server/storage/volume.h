/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Volumes: named persistent file systems with a size quota, mounted into sandboxes (E2B's
 * /volumes, docs/e2b-wire.md §2.6).
 *
 * A volume is an ext4 image of its size on the state disk, <state>/volumes/<id>/disk.img
 * (storage/disk-image.h: the same admission as sandbox disks, preallocated under overcommit 1,
 * so a full volume is ENOSPC inside it and never a lost write on the host), with its record
 * <state>/volumes/<id>/volume.json written atomically. While anything uses it (a sandbox that
 * mounts it, a request of the content API), sbxd keeps the image mounted once on the host at
 * <state>/volumes/<id>/mnt (a loop device, nosuid,nodev,noatime, private propagation), and
 * every sandbox gets a bind of that one mount (jail spec "volumes", idmapped by the jailer):
 * one file system, one page cache, shared by all. The last user's release unmounts it (the
 * loop device goes with it: autoclear), after VOLUME_IDLE_UNMOUNT_S when that user was a
 * content request, so a run of file operations mounts once.
 *
 * Users are counted: volume_acquire() / volume_release(). A sandbox holds its volumes from its
 * create to its teardown (running, paused or persisted); a restarted sbxd counts the adopted
 * sandboxes again, and a mount left by the earlier run is taken over, never mounted twice (two
 * mounts of one image through two loop devices would be two ext4 instances writing the same
 * blocks): the image's existing loop device is reused. Deleting a volume in use is -EBUSY
 * (409).
 *
 * Limits: VOLUMES_MAX volumes, names [A-Za-z0-9_-]{1,VOLUME_NAME_MAX} (E2B's rule, with a
 * length), sizes VOLUME_MIN_MB..the per-sandbox disk maximum (--max-sandbox-disk), default
 * VOLUME_DEFAULT_MB.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/disk-image.h"

#define VOLUMES_MAX           256
#define VOLUME_NAME_MAX       63
#define VOLUME_ID_LEN         36 /* a UUID, as E2B's ids */
#define VOLUME_TOKEN_BYTES    24 /* the content API's bearer token: 48 hex digits */
#define VOLUME_DEFAULT_MB     1024
#define VOLUME_MIN_MB         16
#define VOLUME_RECORD_NAME    "volume.json"
#define VOLUME_MOUNT_DIRNAME  "mnt"
#define VOLUME_IDLE_UNMOUNT_S 10 /* a volume only the content API used stays mounted so long */

struct volume_store;

/* A copy of what the store knows of one volume. */
struct volume_info {
        char id[VOLUME_ID_LEN + 1];
        char name[VOLUME_NAME_MAX + 1];
        char token[2 * VOLUME_TOKEN_BYTES + 1];
        uint64_t size_mb;
        int64_t created_at; /* unix seconds */
        unsigned users;     /* sandboxes using it now */
};

/* Load every record under <state>/volumes (a dir without a readable record is skipped with a
 * warning; nothing is deleted) and note which are still mounted from an earlier run. */
int volume_store_open(const char *state_dir, struct volume_store **ret);
/* Unmount the volumes nobody uses (after adoption: a mount whose sandboxes did not survive
 * the restart). */
void volume_store_settle(struct volume_store *st);
/* Unmounts the idle volumes and frees the table; mounts in use stay (their sandboxes keep
 * running). NULL is fine. */
void volume_store_free(struct volume_store *st);

/* [A-Za-z0-9_-]{1,VOLUME_NAME_MAX}. */
bool volume_name_valid(const char *name);
/* The lowercase UUID form 8-4-4-4-12. */
bool volume_id_valid(const char *id);

/* Create a volume of size_mb (validated by the caller) named name: -EEXIST (name taken),
 * -EDQUOT (VOLUMES_MAX), -ENOSPC (the state disk cannot take it; errmsg says why), -errno. */
int volume_create(struct volume_store *st, const char *name, uint64_t size_mb,
                  const struct disk_policy *pol, struct volume_info *ret, char *errmsg,
                  size_t errlen);
/* By id / by name: -ENOENT when unknown. */
int volume_get(struct volume_store *st, const char *id, struct volume_info *ret);
int volume_find_name(struct volume_store *st, const char *name, struct volume_info *ret);
/* All volumes, oldest first, in *ret (caller frees), their count in *ret_n. */
int volume_list(struct volume_store *st, struct volume_info **ret, size_t *ret_n);
/* Delete a volume no sandbox uses, and its image: -ENOENT, -EBUSY (users > 0, in
 * *ret_users). A content request in flight keeps its open files on the detached mount. */
int volume_delete(struct volume_store *st, const char *id, unsigned *ret_users);

/* Count a user of volume id, a sandbox or (request) a content request, mounting it on the host
 * first when it has none; the mount's path in ret_mnt (PATH_MAX bytes). -ENOENT (unknown),
 * -errno of the mount. Only sandboxes make a delete 409: a request is released when its
 * answer is sent, after the client may already have it and asked for the delete. */
int volume_acquire(struct volume_store *st, const char *id, bool request, char *ret_mnt,
                   size_t mnt_len);
/* Drop a user; the last one unmounts, at once (a sandbox's teardown) or, after a request (the
 * next one is likely to follow), at the first volume_store_sweep() VOLUME_IDLE_UNMOUNT_S
 * later, saving the next request a mount (tens of ms). */
void volume_release(struct volume_store *st, const char *id, bool request);
/* Unmount the volumes idle for VOLUME_IDLE_UNMOUNT_S (the sampler calls it every few s). */
void volume_store_sweep(struct volume_store *st);
/* <state>/volumes/<id>/mnt, what the jail spec binds (no check that it exists). */
int volume_mount_path(const char *state_dir, const char *id, char *buf, size_t len);
