/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What sbx-egress gives up before it reads a byte a sandbox sends (egress/README.md
 * "Confinement"), in this order:
 *   1. limits (egress_privsep_limits): EGRESS_NOFILE descriptors, EGRESS_NPROC threads of its
 *      user, no core dumps;
 *   2. its user (egress_privsep_drop): no supplementary groups, the uid and gid sbxd chose (a uid
 *      slot no sandbox uses, so no sandbox shares its per-user kernel counters), every
 *      capability gone from every set (bounding and ambient included), no_new_privs, not
 *      dumpable (no ptrace, no /proc/<pid>/mem of it by its own user);
 *   3. a seccomp allow-list (egress_privsep_seccomp), loaded last: what a resolver and a proxy
 *      need (sockets of the internet families, polling, threads, memory, reading the CA
 *      bundle and NSS files); anything else fails with EPERM, and clone3 with ENOSYS (so that
 *      the C library falls back to clone, whose flags are checked: threads only).
 */
#pragma once

#include <sys/types.h>

#define EGRESS_NOFILE 8192 /* descriptors: 2 per proxied connection, 1 per DNS query in flight */
#define EGRESS_NPROC  2048 /* threads of sbx-egress's user (one per proxied connection) */

int egress_privsep_limits(void);
int egress_privsep_drop(uid_t uid, gid_t gid);
int egress_privsep_seccomp(void);
