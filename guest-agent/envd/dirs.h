/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's EnsureDirs: the missing directories of a path are created with envd's rights and
 * belong to the requesting user (uploads, MakeDir, Move).
 */
#pragma once

/*
 * mkdir -p of the absolute, cleaned path dir. The calling thread must be switched to the
 * requesting user (agent_fs_become). envd runs as root and chowns what it creates; here the
 * walk runs with CAP_DAC_OVERRIDE raised in the thread's effective set, so directories are
 * created (and traversed) whatever the permissions of their parents, and are owned by the
 * user from the start (the fs uid/gid make them so: no chown, so nothing swapped in between
 * can be chowned). Existing components are followed like envd's os.Stat/Mkdir do (symlinks
 * included), magic links are refused. Nothing else is done with the raised capability.
 *
 * On success *ret_dirfd (may be NULL) is an O_PATH fd of dir. Returns 1 when dir itself was
 * created, 0 when it existed; -ENOTDIR when a component is not a directory, -ELOOP for a
 * magic link, other -errno from mkdir/open (-ENOSPC, -EROFS, ...).
 */
int agent_fs_ensure_dirs(const char *dir, int *ret_dirfd);
