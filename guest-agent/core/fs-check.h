/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the kernel's permission checks do not cover when the agent does file work for a user
 * (core/users.h): the agent's own /proc entries. The kernel lets a process into its own
 * /proc/<pid> (environ, maps, mem, fd/, …, its threads' /proc/<tid> too) whatever its
 * credentials, because it is the same thread group; a shell of any user is refused most of it
 * (the agent is not dumpable). File work on behalf of a user is refused all of it.
 */
#pragma once

#include <stdbool.h>

/* -EACCES when fd is at or below /proc/<pid> of the agent or one of its threads, else 0
 * (-errno when fd cannot be examined). */
int agent_fs_check_fd(int fd);

/* The same for path, looked up with O_PATH (its last component followed when follow) with the
 * calling thread's credentials: -errno when it does not resolve (-ELOOP for a magic link on the
 * way: path-based operations would follow one, into the agent's own fds), else as above. */
int agent_fs_check_path(const char *path, bool follow);
