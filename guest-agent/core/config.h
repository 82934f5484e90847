/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandbox-wide defaults set by sbxd's `POST /init` on the internal port: environment variables
 * applied to every process, the default user and working directory. Shared by all connection
 * threads; every accessor copies under a lock.
 */
#pragma once

#include <stddef.h>

#define AGENT_DEFAULT_USER    "user"
#define AGENT_MAX_INIT_BODY   (1024u * 1024u)
#define AGENT_MAX_GLOBAL_ENVS 1024u

/* Apply an /init JSON body. Fields that are absent keep their value. -EINVAL for bad JSON or
 * wrongly typed fields (nothing is applied then), -ENOMEM. */
int agent_config_apply_init(const char *json, size_t len);

/* Copies (caller frees). The user is never NULL; the workdir may be NULL (unset). */
int agent_config_default_user(char **ret);
int agent_config_default_workdir(char **ret);

/* A NULL-terminated copy of the global env as "KEY=VALUE" strings (free with strv_free). */
int agent_config_envs(char ***ret);

void strv_free(char **l);
static inline void strv_freep(char ***l)
{
        strv_free(*l);
}
#define _cleanup_strv_free_ __attribute__((cleanup(strv_freep)))
