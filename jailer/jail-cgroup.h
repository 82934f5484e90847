/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's cgroups. Two layouts are supported:
 *  - hybrid (this machine): v1 memory, pids, cpu (+ cpuacct, freezer when mounted) at
 *    /sys/fs/cgroup/<ctrl>/<name>, plus the controller-less v2 group
 *    /sys/fs/cgroup/unified/<name> that sbxd uses for cgroup.kill and cgroup.events;
 *  - pure v2: /sys/fs/cgroup/<name> with memory, pids and cpu enabled from the root down.
 */
#pragma once

#include "jail-spec.h"

#define JAIL_CGROUP_MAX_DIRS 8

struct jail_cgroup {
        size_t n;
        char *dirs[JAIL_CGROUP_MAX_DIRS];   /* absolute sandbox cgroup dirs, one per hierarchy */
        char *origin[JAIL_CGROUP_MAX_DIRS]; /* where this process was before attaching */
        int created[JAIL_CGROUP_MAX_DIRS];  /* dirs[i] was made by us and may be removed */
};

/* Creates the sandbox cgroup in every hierarchy (parents as needed, the leaf must not exist:
 * -EEXIST) and writes the limits of spec. On failure, removes what it created; *cg is left
 * empty. cg must be zero-initialised; release with jail_cgroup_done(). */
int jail_cgroup_create(struct jail_cgroup *cg, const struct sbx_jail_spec *spec);

/* Moves the calling process into every sandbox cgroup. */
int jail_cgroup_attach(struct jail_cgroup *cg);

/* Moves the calling process back where it came from (or the hierarchy root) and removes the
 * dirs we created. The sandbox's processes must be dead. Returns the first error. */
int jail_cgroup_remove(struct jail_cgroup *cg);

/* Frees the bookkeeping only. */
void jail_cgroup_done(struct jail_cgroup *cg);
