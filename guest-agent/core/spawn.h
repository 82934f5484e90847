/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Starting a user process: fork, then in the child drop to the user's credentials with the
 * user's capabilities as bounding, permitted and effective set (core/users.h's
 * agent_user_caps(): root's six file and user capabilities for uid 0, however root was asked
 * for; nothing for anyone else), wire stdio and exec. The child is a session and process-group
 * leader (pid == pgid == sid), so its whole group can be signalled with kill(-pid, sig).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "core/users.h"

/* argv[0] "/bin/bash" runs "/bin/sh" with the same arguments when the image has no bash (at
 * most SPAWN_SH_MAX_ARGS of them; core/spawn.c exec_sh_for_bash()). */
#define SPAWN_BASH        "/bin/bash"
#define SPAWN_SH          "/bin/sh"
#define SPAWN_SH_MAX_ARGS 256

struct agent_spawn {
        const char *const *argv; /* argv[0] is the command as given (searched in PATH) */
        const char *const *envp; /* the complete environment; its PATH drives the search */
        const char *cwd;         /* absolute; chdir happens as the user */
        const struct agent_user *user;
        bool stdin_pipe; /* else stdin is /dev/null (ignored with pty) */
        bool pty;        /* stdin/stdout/stderr on a new pseudo-terminal, its controlling tty */
        unsigned short cols, rows;
        /* When set: stdin, stdout, stderr and the working directory (a directory fd, entered
         * with fchdir as the user; -1: cwd) are these fds, the caller's (sudo/: what its
         * client passed); stdin_pipe and pty are ignored and *ret has no fds. */
        const int *fds;
};

struct agent_spawned {
        pid_t pid;
        int stdin_fd;  /* write end, -EBADF without stdin_pipe; with pty a dup of the master */
        int stdout_fd; /* read ends, O_NONBLOCK; with pty the master */
        int stderr_fd; /* -EBADF with pty */
};

/*
 * Fork and exec s. All fds returned are O_CLOEXEC and owned by the caller. The caller must
 * hold whatever lock its child-exit path takes so that the pid is recorded before the reaper
 * can see it exit. Failures after the fork (credentials, chdir, exec) are not returned: the
 * child writes "sbx-agent: <what>: <error>" to its stderr and exits 127 (exec ENOENT) or 126,
 * as a shell would, so the caller reports them as a normal exit. Returns 0 or -errno from
 * pipe/fork (-EAGAIN, -ENOMEM, -EMFILE...).
 */
int agent_spawn(const struct agent_spawn *s, struct agent_spawned *ret);
