/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's EnsureDirs: the missing directories of a path are created for the requesting user
 * (uploads, MakeDir, Move), bounded by the sandbox's own rights.
 */
#pragma once

#include "core/users.h"

/*
 * mkdir -p of the absolute, cleaned path for user u; the calling thread must be switched to u
 * (agent_fs_become). envd runs as root and chowns what it creates. Here each step is done with
 * the user's own rights or, where they do not suffice, with the rights of the sandbox's root
 * (uid 0 without capabilities, as a shell has it), never more: an existing component is looked
 * up as the user, else as that root; a missing one is created as the user, else where that
 * root could create it (checked with faccessat as root), with CAP_DAC_OVERRIDE raised for that
 * one mkdirat so that it belongs to the user from the start (no chown, so nothing swapped in
 * between can be chowned). New directories are 0755. Symlinks among existing components are
 * followed (as envd's os.Stat/Mkdir do), magic links are refused.
 *
 * On success *ret_dirfd (may be NULL) is an O_PATH fd of the directory. Returns 1 when it was
 * created, 0 when it existed; -ENOTDIR when a component is not a directory, -ELOOP for a magic
 * link, -EACCES where neither the user nor the sandbox's root may go, other -errno from
 * mkdir/open (-ENOSPC, -EROFS, ...), -EPERM when switching credentials failed. After any
 * error the caller must do no more file work for the request: a failed switch leaves the thread
 * with the agent's own credentials (agent_fs_become).
 */
int agent_fs_ensure_dirs(const struct agent_user *u, const char *path, int *ret_dirfd);
