/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's share of the kernel's per-user counters ("ucounts"): inotify instances and
 * watches, fanotify groups and marks, namespaces of each kind, and the counts behind
 * RLIMIT_NPROC, RLIMIT_MSGQUEUE, RLIMIT_SIGPENDING and RLIMIT_MEMLOCK. A charge made inside
 * a user namespace is also made, one level up, to the uid that owns the namespace (the
 * effective uid that created it), against the parent namespace's limits. The parent therefore
 * creates the sandbox's user namespace with the sandbox's own host ids as effective ids: all a
 * sandbox takes is counted against its own host uid, never against host root's. The child then
 * writes its namespace's own limits (/proc/sys/user), per uid inside the sandbox.
 * jailer/README.md ("Kernel counters") has the table of every counter.
 */
#pragma once

#include <sys/types.h>

/* A uid inside the sandbox may take this fraction of the sandbox's share of inotify instances
 * and watches: `user` code that takes all it can leaves sandbox root (the agent, whose watches
 * are the files API's) the rest. */
#define JAIL_UCOUNT_UID_SHARE_NUM 3
#define JAIL_UCOUNT_UID_SHARE_DEN 4

struct jail_ucount {
        long inotify_instances; /* per uid inside the sandbox */
        long inotify_watches;
};

/* Parent, before clone: the per-uid inotify limits of the jailer's own user namespace (the
 * level the sandbox is charged at, /proc/sys/user/max_inotify_*), and from them the limits
 * each uid inside the sandbox gets. */
int jail_ucount_plan(struct jail_ucount *u);

/* Parent, around clone(CLONE_NEWUSER): effective uid and gid become `id` (real and saved ids
 * stay 0, capabilities stay, SECBIT_NO_SETUID_FIXUP), so the kernel records `id` as the new
 * namespace's owner; jail_ucount_owner_leave() returns to uid and gid 0 and the securebits
 * found. Nothing but clone may run in between. */
int jail_ucount_owner_enter(uid_t id, int *ret_saved_securebits);
int jail_ucount_owner_leave(int saved_securebits);

/* Child, with every capability in its user namespace and the host's /proc still its /proc:
 * writes its namespace's limits (each uid inside): 0 user, pid, uts, ipc, net, cgroup and time
 * namespaces, 0 fanotify groups and marks, u's inotify limits. Entries this kernel lacks are
 * skipped. */
int jail_ucount_limit(const struct jail_ucount *u);
