/* SPDX-License-Identifier: Apache-2.0 */
#include "proc/process-env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/spawn.h"
#include "macros.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* ---- environment ---- */

/* Set name=value in a NULL-terminated list, replacing an earlier entry of the same name. */
static int env_set(char **l, size_t *n, const char *kv)
{
        size_t klen = strcspn(kv, "=");
        char *d = strdup(kv);

        if (!d)
                return -ENOMEM;
        for (size_t i = 0; i < *n; i++)
                if (strncmp(l[i], kv, klen) == 0 && l[i][klen] == '=') {
                        free(l[i]);
                        l[i] = d;
                        return 0;
                }
        l[(*n)++] = d;
        l[*n] = NULL;
        return 0;
}

static int env_setf(char **l, size_t *n, const char *k, const char *v)
{
        _cleanup_free_ char *kv = NULL;
        if (asprintf(&kv, "%s=%s", k, v) < 0)
                return -ENOMEM;
        return env_set(l, n, kv);
}

/* PATH (the agent's), HOME, USER, LOGNAME, SHELL, then /init's envVars, then the request's. */
int agent_process_build_env(const struct agent_user *u, const cJSON *envs, char ***ret)
{
        _cleanup_strv_free_ char **global = NULL;
        const char *path = getenv("PATH");
        size_t n = 0, cap;
        const cJSON *e;
        int r;

        if (!path || !*path)
                path = DEFAULT_PATH;
        /* envd's SHELL is bash; an image without bash (busybox, Alpine) gets the user's own
         * shell, which is what runs the commands there (core/spawn.h). */
        const char *shell = access(SPAWN_BASH, X_OK) == 0 || !u->shell ? SPAWN_BASH : u->shell;

        r = agent_config_envs(&global);
        if (r < 0)
                return r;
        cap = 6 + (size_t)(envs ? cJSON_GetArraySize(envs) : 0);
        for (char **g = global; *g; g++)
                cap++;
        _cleanup_strv_free_ char **l = calloc(cap + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        if ((r = env_setf(l, &n, "PATH", path)) < 0 || (r = env_setf(l, &n, "HOME", u->home)) < 0 ||
            (r = env_setf(l, &n, "USER", u->name)) < 0 ||
            (r = env_setf(l, &n, "LOGNAME", u->name)) < 0 ||
            (r = env_setf(l, &n, "SHELL", shell)) < 0)
                return r;
        for (char **g = global; *g; g++)
                if ((r = env_set(l, &n, *g)) < 0)
                        return r;
        if (envs)
                cJSON_ArrayForEach(e, envs)
                {
                        if ((r = env_setf(l, &n, e->string, e->valuestring)) < 0)
                                return r;
                }
        *ret = TAKE_PTR(l);
        return 0;
}

int agent_process_build_argv(const char *cmd, const cJSON *args, char ***ret)
{
        size_t n = 1 + (size_t)(args ? cJSON_GetArraySize(args) : 0), i = 0;
        const cJSON *e;
        _cleanup_strv_free_ char **l = calloc(n + 1, sizeof(char *));

        if (!l || !(l[i++] = strdup(cmd)))
                return -ENOMEM;
        if (args)
                cJSON_ArrayForEach(e, args)
                {
                        if (!(l[i++] = strdup(e->valuestring)))
                                return -ENOMEM;
                }
        *ret = TAKE_PTR(l);
        return 0;
}
