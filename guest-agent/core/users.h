/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Users inside the sandbox (from its /etc/passwd and /etc/group) and per-thread file-system
 * credentials for doing file work with a user's rights.
 */
#pragma once

#include <sys/types.h>

struct agent_user {
        char *name;
        char *home;
        char *shell;
        uid_t uid;
        gid_t gid;
        int n_groups; /* supplementary groups, including gid */
        gid_t *groups;
};

/* Look up name in the sandbox's /etc/passwd and /etc/group (parsed directly, never through
 * NSS). -ENOENT when the user does not exist (callers answer 401), -ENOMEM or another -errno.
 * On success the caller owns *ret (free with agent_user_done). */
int agent_user_lookup(const char *name, struct agent_user *ret);
void agent_user_done(struct agent_user *u);

/*
 * Switch the calling thread's fsuid, fsgid and supplementary groups to u, so that opens,
 * mkdirs and renames are checked against (and create files owned by) that user, while the
 * rest of the agent keeps running as root. Uses the raw syscalls, which act on one thread;
 * glibc's wrappers would broadcast the change to every thread of the agent. Changing fsuid
 * away from 0 also drops the file-system capabilities from the thread's effective set.
 * agent_fs_restore() switches back to 0/0/no groups; it must be called before the thread does
 * anything else (use _cleanup_fs_creds_).
 */
int agent_fs_become(const struct agent_user *u);
void agent_fs_restore(void);

static inline void agent_fs_restorep(int *active)
{
        if (*active)
                agent_fs_restore();
}
#define _cleanup_fs_creds_ __attribute__((cleanup(agent_fs_restorep)))
