/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Removing every trace of a sandbox (jailer/README.md, "Teardown"):
 *   1. SIGKILL the agent (PID 1 of the sandbox's pid namespace, so the kernel kills every
 *      process in it) through its pidfd and wait (bounded) for it to die;
 *   2. cgroup.kill of sbx/<id> and wait (bounded, 5 s) for "populated 0" (common/cgroup-util.h);
 *   3. rmdir sbx/<id> (children first) in the v2 hierarchy and in every v1 hierarchy;
 *   3b. unmount the upper's file system at <state>/sandboxes/<id>/rootfs (jailer
 *       upper_on_host; its loop device goes with it) and remove its disk image;
 *   4. remove <state>/sandboxes/<id> without following symlinks or crossing mounts.
 * Every step runs even when an earlier one failed; the first error is returned.
 */
#pragma once

#include <sys/types.h>

#define CGROUP_ROOT    "/sys/fs/cgroup"
#define CGROUP_UNIFIED CGROUP_ROOT "/unified"
/* Every sandbox's cgroup is <parent>/<id> in each hierarchy; the parent carries the limits of
 * all of them (lifecycle/host-limits.h). "sbx" unless --cgroup-parent names another (two sbxd on
 * one host, e.g. cluster nodes or tests, each with its own). Set once at start. */
#define CGROUP_PARENT_DEFAULT "sbx"
#define CGROUP_PARENT         cgroup_parent()
const char *cgroup_parent(void);
void cgroup_parent_set(const char *name);

/* Steps 1-3 plus unmounting the host-visible tmpfs upper at <dir>/rootfs (dir may be NULL):
 * no process, cgroup or mount of the sandbox is left, its dir and files stay (persisting a
 * paused sandbox to disk). */
int teardown_processes(const char *id, pid_t pid, int pidfd, const char *dir);

/* pidfd may be negative (then pid, if > 0, is signalled by number). dir may be NULL. Both
 * refuse (-EINVAL, touching nothing) an id that is empty, ".", ".." or has a '/': the cgroup
 * and dir it would name are the parent's, every sandbox's. */
int teardown_sandbox(const char *id, pid_t pid, int pidfd, const char *dir);
