/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's share of the kernel's per-user counters ("ucounts"): inotify instances and
 * watches, fanotify groups and marks, namespaces of each kind, and the counts behind
 * RLIMIT_NPROC, RLIMIT_MSGQUEUE, RLIMIT_SIGPENDING and RLIMIT_MEMLOCK. A charge made inside
 * a user namespace is also made, one level up, to the uid that owns the namespace (the
 * effective uid that created it), against the parent namespace's limits. The parent therefore
 * creates the sandbox's user namespace with the sandbox's own host ids as effective ids: all a
 * sandbox takes is counted against its own host uid, never against host root's.
 * jailer/README.md ("Kernel counters") has the table of every counter.
 */
#pragma once

#include <sys/types.h>

/* Parent, around clone(CLONE_NEWUSER): effective uid and gid become `id` (real and saved ids
 * stay 0, capabilities stay, SECBIT_NO_SETUID_FIXUP), so the kernel records `id` as the new
 * namespace's owner; jail_ucount_owner_leave() returns to uid and gid 0 and the securebits
 * found. Nothing but clone may run in between. */
int jail_ucount_owner_enter(uid_t id, int *ret_saved_securebits);
int jail_ucount_owner_leave(int saved_securebits);
