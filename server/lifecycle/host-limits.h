/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What all sandboxes together may take from the host, set once at start:
 *  - the parent cgroup sbx/ gets --total-memory and --total-pids (derived from the host when
 *    not given: core/server-config.h), so that many sandboxes, each within its own limits,
 *    still leave the host its reserve (three fork bombs took 3,065 host tasks before);
 *  - open files: the kernel's count of open files (fs.file-max) is one for the whole machine,
 *    and a sandbox within its limits could hold 42% of it. Every open file is charged to the
 *    memory cgroup of the sandbox that opened it (about 450 bytes each), so sbxd raises
 *    fs.file-max to the kernel's maximum, as systemd does at boot, and a sandbox's memory limit
 *    (and, for all of them, the parent's) becomes the bound on the files it holds; RLIMIT_NOFILE
 *    still bounds each process (jailer/README.md).
 */
#pragma once

#include "core/server.h"

#define HOST_FILE_MAX "/proc/sys/fs/file-max"

/* Apply the limits; failures are logged (a host without the knobs still runs sandboxes) and
 * returned as -errno for the first one. */
int host_limits_apply(const struct sbxd_config *c);
