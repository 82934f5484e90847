/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Users inside the sandbox (from its /etc/passwd and /etc/group) and per-thread file-system
 * credentials for doing file work with a user's rights.
 */
#pragma once

#include <stdint.h>
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

/* A set of capabilities: bit c is capability c (CAP_CHOWN = 0, ...). */
#define AGENT_CAP_BIT(c) ((uint64_t)1 << (c))

/*
 * The capabilities of a process of uid in the sandbox, the one place that says them, however
 * the uid was reached (sudo, envd's and the native API's user "root", a code kernel) and for the
 * file APIs acting as that user. For uid 0, the sandbox root's file and user capabilities:
 * CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETUID, CAP_SETGID (a subset of the
 * agent's own). They are capabilities of the sandbox's own user namespace: the kernel applies
 * them to inodes and ids that map into it, read-only mounts stay read-only, and none of them
 * opens a kernel interface an unprivileged user cannot reach (guest-agent/sudo/README.md, "Why
 * that is safe"). Every other uid: nothing.
 */
uint64_t agent_user_caps(uid_t uid);

/*
 * Switch the calling thread's fsuid, fsgid and supplementary groups to u and make its
 * effective capability set agent_user_caps(u->uid), so that opens, mkdirs and renames are
 * checked against (and create files owned by) that user with exactly the rights a process of
 * that user has (root's six capabilities for root, nothing for anyone else), while the rest of
 * the agent keeps running as root. Uses the raw syscalls, which act on one thread; glibc's and
 * libcap's wrappers would broadcast the change to every thread of the agent. May be called
 * again to switch to another user. agent_fs_restore() switches back to 0/0/no groups with the
 * effective set equal to the permitted set (as the agent runs); it must be called before the
 * thread does anything else (use _cleanup_fs_creds_). On failure the thread is restored and
 * -EPERM returned.
 */
int agent_fs_become(const struct agent_user *u);
/* The same with an empty effective set whatever u's uid: envd/dirs.c's bound for the parents
 * it creates for another user (uid 0 without capabilities). */
int agent_fs_become_bare(const struct agent_user *u);
void agent_fs_restore(void);

/* While switched: cap (from the permitted set) alone in the effective set, for one operation
 * that a caller has checked is within bounds it states; agent_fs_cap_lower() sets the effective
 * set back to what the last switch gave (agent_fs_become: the user's; _bare: none). -errno on
 * failure (lower: the caller must stop its file work). */
int agent_fs_cap_raise(int cap);
int agent_fs_cap_lower(void);

static inline void agent_fs_restorep(int *active)
{
        if (*active)
                agent_fs_restore();
}
#define _cleanup_fs_creds_ __attribute__((cleanup(agent_fs_restorep)))
