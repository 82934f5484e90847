/* SPDX-License-Identifier: Apache-2.0 */
/* Blocking fd helpers. All return >= 0 on success, -errno on failure. */
#pragma once

#include <dirent.h>

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Write all of buf, retrying on EINTR/short writes. Sockets use MSG_NOSIGNAL (-EPIPE, no signal).
 */
int write_full(int fd, const void *buf, size_t len);
/* All of buf to the socket fd without ever blocking in send() (MSG_DONTWAIT, MSG_NOSIGNAL): a
 * full send buffer is waited for, at most timeout_ms each time (-ETIMEDOUT). -EPIPE when the
 * peer is gone, send's or poll's -errno. */
int send_all_wait(int fd, const void *buf, size_t len, int timeout_ms);
/* Read exactly len bytes. Returns 0, -EPIPE on EOF before any byte, -EPROTO on EOF mid-way. */
int read_exact(int fd, void *buf, size_t len);
/* Read a whole (small) fd into a NUL-terminated malloc'd buffer, failing past max bytes. */
int read_all(int fd, size_t max, char **ret_buf, size_t *ret_len);
/* Write a string to a file (e.g. a cgroup or /proc knob). */
int write_file(const char *path, const char *value);
/* Replace path with len bytes of data, atomically and durably: written to a new temporary
 * file in the same directory, fsync'ed, renamed over path, and the directory fsync'ed, so
 * that after a crash path holds either the old or the new contents, and once this returns 0
 * the new contents survive one. Any failure (ENOSPC on a full disk among them) leaves path as
 * it was and no temporary file behind. mode applies to a newly created file. */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
/* Set or clear O_NONBLOCK. */
int fd_set_nonblock(int fd, int on);

/* Levels of a tree rm_rf() holds open at once (two descriptors each): deeper directories are
 * moved up to the top of the tree being removed (as .sbx-rm.N) and removed from there, so a
 * tree of any depth costs at most this many levels of descriptors and stack. */
#define RM_RF_HOLD 32u

/* rm -rf path: never follows symlinks, never leaves the file system path is on. 0 when path
 * does not exist; -EBUSY when a mount point below it was left in place. */
int rm_rf(const char *path);
/* The same for the entry name of directory dfd (a symlink is removed, never followed). -ENOENT
 * when it does not exist. */
int rm_rf_at(int dfd, const char *name);
/* The same, for a tree of untrusted shape: a directory more than max_depth levels below name
 * is left in place, and the directories holding it (-ELOOP); everything else goes. */
int rm_rf_at_depth(int dfd, const char *name, unsigned max_depth);

/* A DIR stream over a duplicate of dfd (dfd stays the caller's), rewound to the start: for
 * walking a directory opened with openat(). NULL with errno on failure; closedir() it. */
DIR *opendir_fd(int dfd);
/* The names in directory dfd but "." and ".." (and, given keep, but those it refuses), sorted
 * by strcmp (the same order on every machine), at *ret: a NULL-terminated array, the caller
 * frees each and it; their count at *ret_n. -ERANGE when there are more than max, -ENOMEM, or
 * opendir's -errno. */
int dir_names_sorted(int dfd, size_t max, bool (*keep)(const char *name), char ***ret,
                     size_t *ret_n);
