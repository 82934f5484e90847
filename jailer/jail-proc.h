/* SPDX-License-Identifier: Apache-2.0 */
/* Process state of the agent-to-be: rlimits, capabilities, fds, environment, exec. */
#pragma once

#include "jail-spec.h"

#define JAIL_AGENT_LISTEN_FD 3
#define JAIL_NOFILE          65536
/* The sandbox's shares of three per-user counts (jailer/README.md, "Kernel counters"):
 * POSIX message queue bytes (the kernel's default), queued signals (what a 4 GiB machine
 * gives), memory locked through SHM_LOCK and the like (the kernel's default). */
#define JAIL_MSGQUEUE_BYTES 819200
#define JAIL_SIGPENDING     16384
#define JAIL_MEMLOCK_BYTES  (8 * 1024 * 1024)

/* Parent (host root, which may raise hard limits), each with soft = hard: RLIMIT_NOFILE
 * 65536, RLIMIT_CORE 0, RLIMIT_MSGQUEUE, RLIMIT_SIGPENDING and RLIMIT_MEMLOCK as above (each
 * lowered to the current hard limit when that is lower and CAP_SYS_RESOURCE is missing). The
 * child inherits them across clone; the three counted ones also become its user namespace's
 * maxima; inside the userns they could only be lowered. */
int jail_proc_rlimits(void);

/* Child: drop every capability outside the agent's set (see jailer/README.md) from the bounding,
 * permitted, effective and inheritable sets, and clear the ambient set. */
int jail_proc_drop_caps(void);

/* Child: lay out fds for exec: 0 and 1 on /dev/null, 2 inherited, listen_fd moved to 3
 * (inheritable), sync_fd moved to 4 with O_CLOEXEC, everything else closed. *sync_fd is
 * updated. */
int jail_proc_fds(int listen_fd, int *sync_fd);

/* Builds the agent's environment: spec->env, then PATH if absent, SBX_SANDBOX_ID and
 * SBX_AGENT_LISTEN_FD=3 (these two always win). Caller frees the array and its strings. */
int jail_proc_env(const struct sbx_jail_spec *spec, char ***ret_env);
