/* SPDX-License-Identifier: Apache-2.0 */
/* Process state of the agent-to-be: rlimits, capabilities, fds, environment, exec. */
#pragma once

#include "jail-spec.h"

#define JAIL_AGENT_LISTEN_FD 3
#define JAIL_NOFILE          65536

/* Parent (host root, which may raise hard limits): RLIMIT_NOFILE 65536 (or the current hard
 * limit when it is lower and CAP_SYS_RESOURCE is missing), RLIMIT_CORE 0. The
 * child inherits them across clone; inside the userns it could only lower them. */
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
