/* SPDX-License-Identifier: Apache-2.0 */
/* argv and environment of a new process. */
#pragma once

#include <cjson/cJSON.h>

#include "core/users.h"

/* PATH (the agent's), HOME, USER, LOGNAME, SHELL, then /init's envVars, then envs (a JSON object
 * of strings, or NULL). NULL-terminated, caller frees (strv). -ENOMEM. */
int agent_process_build_env(const struct agent_user *u, const cJSON *envs, char ***ret);

/* cmd followed by the strings of args (a JSON array, or NULL). -ENOMEM. */
int agent_process_build_argv(const char *cmd, const cJSON *args, char ***ret);
