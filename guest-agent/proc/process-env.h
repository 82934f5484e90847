/* SPDX-License-Identifier: Apache-2.0 */
/* argv and environment of a Start request's process. */
#pragma once

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/users.h"

/* PATH (the agent's), HOME, USER, LOGNAME, SHELL, then /init's envVars, then envs (a JSON object
 * of strings, or NULL). NULL-terminated, caller frees (strv). -ENOMEM. */
int agent_process_build_env(const struct agent_user *u, const cJSON *envs, char ***ret);

/* cmd followed by the strings of args (a JSON array, or NULL). -ENOMEM. */
int agent_process_build_argv(const char *cmd, const cJSON *args, char ***ret);

/* Connect-Timeout-Ms (1..10 digits; NULL → 0 = none). -EINVAL when malformed. */
int agent_parse_connect_timeout(const char *s, int64_t *ret);

/* Keepalive-Ping-Interval in seconds (90 when absent or invalid, at most a day). */
int agent_parse_keepalive(const char *s);
