/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running sbx-jailer (jailer/README.md): the spec (api/jail-spec.md) on fd 3, status pipe on fd 4,
 * own session, stdin/stdout on /dev/null, stderr appended to log_path (it becomes the agent's
 * stderr and must stay valid after sbxd exits). Exactly one status line comes back.
 */
#pragma once

#include <cjson/cJSON.h>
#include "jail-spec.h"
#include <sys/types.h>

#define JAIL_STATUS_TIMEOUT_MS 10000
#define JAIL_STATUS_MAX        4096

struct jail_result {
        int ok;        /* 1: the agent runs */
        pid_t pid;     /* host pid of the agent when ok */
        char step[64]; /* failing step when !ok ("spawn", "status" for sbxd-side failures) */
        int err;       /* errno the jailer reported (positive), 0 when unknown */
        char message[512];
};

/* Run the jailer with spec, wait for its status line (bounded) and reap it. Returns 0 when a
 * status was obtained (ret->ok tells which), or -errno when the jailer could not be run or
 * said nothing usable in time (it is then killed, with its process group, and reaped); ret
 * then still carries a description in step/message. */
int jail_spawn(const char *jailer, const char *log_path, const struct sbx_jail_spec *spec,
               struct jail_result *ret);

/* jail_spawn, with during(arg) run once the jailer is started and before its status is read
 * (sbxd's share of a start that can overlap the jailer's: the egress rules). Its result in
 * *ret_during (0 when during is NULL). */
int jail_spawn_during(const char *jailer, const char *log_path, const struct sbx_jail_spec *spec,
                      int (*during)(void *arg), void *arg, int *ret_during,
                      struct jail_result *ret);

/* The egress link for a running sandbox (the jailer's --attach-egress, jailer/README.md): its
 * agent's pidfd, its uid_base (owner of the /etc/resolv.conf written), the link. Returns as
 * jail_spawn; ret->ok and ret->pid (the agent's) on success. */
int jail_attach_egress(const char *jailer, const char *log_path, int pidfd, uint32_t uid_base,
                       const struct sbx_jail_egress *e, struct jail_result *ret);

/* Parse one status line. Pure; used by tests. */
int jail_parse_status(const char *line, struct jail_result *ret);
