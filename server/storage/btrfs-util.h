/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The btrfs ioctls the storage pool needs (storage/disk-pool.h), each a thin, fd-based wrapper
 * returning 0 or -errno. No program is run: subvolumes, snapshots, qgroup limits and usage are
 * kernel calls (<linux/btrfs.h>), so a create or a snapshot costs microseconds, not an exec.
 * libbtrfsutil covers subvolumes but neither qgroup limits nor qgroup usage, so both halves
 * would be needed anyway; these few calls are simpler written out.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* 1 when fd is on btrfs, 0 when not. */
int btrfs_is_btrfs(int fd);

/* Enable quotas (qgroups) on the file system of fd (a no-op when enabled), and wait for the
 * rescan that enabling them on a file system holding data starts: limits hold after it. */
int btrfs_quota_enable(int fd);

/* The subvolume (tree) id of the subvolume fd is in. */
int btrfs_subvol_id(int fd, uint64_t *ret);

/* Create subvolume name in dir_fd, its qgroup limited to limit_bytes referenced (0: none). */
int btrfs_subvol_create(int dir_fd, const char *name, uint64_t limit_bytes);

/* Snapshot the subvolume src_fd as name in dir_fd: read-only or writable, its qgroup limited
 * to limit_bytes referenced (0: the source's limit is inherited as btrfs does). */
int btrfs_snapshot(int src_fd, int dir_fd, const char *name, bool readonly, uint64_t limit_bytes);

/* Delete subvolume name of dir_fd (its contents go with it). -ENOENT when absent. */
int btrfs_subvol_delete(int dir_fd, const char *name);

/* Set the referenced-bytes limit of the subvolume fd is (0: no limit). */
int btrfs_qgroup_set_limit(int fd, uint64_t limit_bytes);

/* The qgroup 0/subvol_id's referenced and exclusive bytes and its referenced limit (0: none),
 * read from the quota tree. -ENOENT when no such qgroup. */
int btrfs_qgroup_usage(int fd, uint64_t subvol_id, uint64_t *ret_rfer, uint64_t *ret_excl,
                       uint64_t *ret_limit);

/* The file system's UUID (fsid), "xxxxxxxx-xxxx-...", the name of its /sys/fs/btrfs dir. */
int btrfs_fsid(int fd, char ret[static 37]);

/* Resize device 1 of the file system of fd to its device's full size. */
int btrfs_resize_max(int fd);
