/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File operations inside a volume, for the content API (e2b/volume-content.c), done by sbxd on
 * the host while sandboxes may be writing the same volume.
 *
 * Path safety. A volume's contents are a sandbox's to shape: any path component may be a
 * symlink (absolute, relative, dangling), a FIFO or a socket, and may change between two
 * calls. So no path is ever resolved from the host's root: every lookup starts at the volume's
 * root fd and goes through openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV),
 * which keeps ".." and symlinks (an absolute one included) inside the volume, as the sandbox
 * sees them, and never crosses a mount. What is then changed is changed through an fd
 * (fchown, fchmod, a write) or with an *at call on a final component that does not follow
 * symlinks (unlinkat, the O_NOFOLLOW walk of rm -rf). Reads and writes open with O_NONBLOCK and
 * take regular files only (a FIFO never blocks a thread of sbxd). The volume is mounted nodev,
 * so no device node can be opened through it.
 *
 * Paths are E2B's: relative ones are taken from the root, then cleaned lexically (common's
 * path_clean(): "/a/../b" is "/b", ".." never climbs above "/"). Owners are the sandbox's ids
 * (0..65535: the volume is idmapped into each sandbox); a created file or dir defaults to E2B's
 * 9090:9090 and 0666 / 0777.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#define VOLUME_FS_LIST_MAX      10000 /* entries of one listing; past it 400 */
#define VOLUME_FS_DEPTH_MAX     10    /* E2B's bound on a listing's depth */
#define VOLUME_FS_DEFAULT_OWNER 9090  /* E2B's default uid and gid of what the API creates */
#define VOLUME_FS_DIR_MODE      0777
#define VOLUME_FS_FILE_MODE     0666
#define VOLUME_FS_ID_MAX        65535 /* owners the sandbox can see */

/* What a create or an update sets; has_* false: the default (create) or unchanged (update). */
struct volume_fs_attrs {
        bool has_uid, has_gid, has_mode;
        uint32_t uid, gid, mode;
};

/* The volume's root (O_PATH) from its host mount. */
int volume_fs_open_root(const char *mnt, int *ret_fd);

/* The entry at path (a symlink itself, not its target) as E2B's VolumeEntryStat. -ENOENT. */
int volume_fs_stat(int root, const char *path, cJSON **ret);
/* Entries below dir path, depth levels deep (1..VOLUME_FS_DEPTH_MAX), each level sorted by name.
 * -ENOENT, -ENOTDIR, -ERANGE past VOLUME_FS_LIST_MAX. */
int volume_fs_list(int root, const char *path, unsigned depth, cJSON **ret);
/* mkdir path (with missing parents when parents, which also accepts an existing dir).
 * -EEXIST, -ENOENT (a parent is missing), -ENOTDIR. */
int volume_fs_mkdir(int root, const char *path, const struct volume_fs_attrs *a, bool parents,
                    cJSON **ret);
/* Open path for writing: created, or replaced (truncated) only with force, which also makes
 * missing parents. -EEXIST without force, -EISDIR, -EINVAL (not a regular file). */
int volume_fs_open_write(int root, const char *path, const struct volume_fs_attrs *a, bool force,
                         int *ret_fd);
/* After the last byte: fsync, owner and mode, the entry. */
int volume_fs_finish_write(int fd, const char *path, const struct volume_fs_attrs *a, cJSON **ret);
/* Open a regular file for reading: its size in *ret_size. -ENOENT, -EISDIR, -EINVAL. */
int volume_fs_open_read(int root, const char *path, int *ret_fd, uint64_t *ret_size);
/* rm -rf path: -ENOENT, -EPERM for "/". */
int volume_fs_remove(int root, const char *path);
/* Change owner and/or mode of path (its target when a symlink, as E2B does). -ENOENT. */
int volume_fs_update(int root, const char *path, const struct volume_fs_attrs *a, cJSON **ret);
