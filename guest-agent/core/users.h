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
 * Switch the calling thread's fsuid, fsgid and supplementary groups to u and clear its
 * effective capability set, so that opens, mkdirs and renames are checked against (and create
 * files owned by) that user with exactly the rights a process of that user has (every process
 * the agent starts has no capabilities, root's included), while the rest of the agent keeps
 * running as root. Uses the raw syscalls, which act on one thread; glibc's and libcap's
 * wrappers would broadcast the change to every thread of the agent. May be called again to
 * switch to another user. agent_fs_restore() switches back to 0/0/no groups with the
 * effective set equal to the permitted set (as the agent runs); it must be called before the
 * thread does anything else (use _cleanup_fs_creds_). On failure the thread is restored and
 * -EPERM returned.
 */
int agent_fs_become(const struct agent_user *u);
void agent_fs_restore(void);

/* While switched: cap (from the permitted set) alone in the effective set, for one operation
 * that a caller has checked is within bounds it states; agent_fs_cap_lower() empties the
 * effective set again. -errno on failure (lower: the caller must stop its file work). */
int agent_fs_cap_raise(int cap);
int agent_fs_cap_lower(void);

static inline void agent_fs_restorep(int *active)
{
        if (*active)
                agent_fs_restore();
}
#define _cleanup_fs_creds_ __attribute__((cleanup(agent_fs_restorep)))
