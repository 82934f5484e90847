/* SPDX-License-Identifier: Apache-2.0 */
#include "core/config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "macros.h"
#include "json-util.h"

static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;
static char *config_user;
static char *config_workdir;
static char **config_envs; /* NULL-terminated "K=V" */

void strv_free(char **l)
{
        if (!l)
                return;
        for (char **p = l; *p; p++)
                free(*p);
        free(l);
}

static int envs_from_json(const cJSON *obj, char ***ret)
{
        size_t n = (size_t)cJSON_GetArraySize(obj), i = 0;
        const cJSON *e;

        if (n > AGENT_MAX_GLOBAL_ENVS)
                return -EINVAL;
        _cleanup_strv_free_ char **l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        cJSON_ArrayForEach(e, obj)
        {
                if (!cJSON_IsString(e) || !e->string || !*e->string || strchr(e->string, '='))
                        return -EINVAL;
                if (asprintf(&l[i], "%s=%s", e->string, e->valuestring) < 0) {
                        l[i] = NULL;
                        return -ENOMEM;
                }
                i++;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int agent_config_apply_init(const char *json, size_t len)
{
        _cleanup_json_ cJSON *root = cJSON_ParseWithLength(json, len);
        _cleanup_strv_free_ char **envs = NULL;
        _cleanup_free_ char *user = NULL, *workdir = NULL;
        const cJSON *j;
        int r;

        if (!root || !cJSON_IsObject(root))
                return -EINVAL;
        j = cJSON_GetObjectItemCaseSensitive(root, "envVars");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsObject(j))
                        return -EINVAL;
                r = envs_from_json(j, &envs);
                if (r < 0)
                        return r;
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "defaultUser");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsString(j))
                        return -EINVAL;
                if (*j->valuestring && !(user = strdup(j->valuestring)))
                        return -ENOMEM;
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "defaultWorkdir");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsString(j))
                        return -EINVAL;
                if (*j->valuestring && !(workdir = strdup(j->valuestring)))
                        return -ENOMEM;
        }

        pthread_mutex_lock(&config_lock);
        if (envs) {
                strv_free(config_envs);
                config_envs = TAKE_PTR(envs);
        }
        if (user) {
                free(config_user);
                config_user = TAKE_PTR(user);
        }
        if (workdir) {
                free(config_workdir);
                config_workdir = TAKE_PTR(workdir);
        }
        pthread_mutex_unlock(&config_lock);
        return 0;
}

int agent_config_default_user(char **ret)
{
        char *s;
        pthread_mutex_lock(&config_lock);
        s = strdup(config_user ? config_user : AGENT_DEFAULT_USER);
        pthread_mutex_unlock(&config_lock);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int agent_config_default_workdir(char **ret)
{
        char *s = NULL;
        int r = 0;
        pthread_mutex_lock(&config_lock);
        if (config_workdir && !(s = strdup(config_workdir)))
                r = -ENOMEM;
        pthread_mutex_unlock(&config_lock);
        if (r == 0)
                *ret = s;
        return r;
}

int agent_config_envs(char ***ret)
{
        size_t n = 0;
        int r = 0;

        pthread_mutex_lock(&config_lock);
        while (config_envs && config_envs[n])
                n++;
        char **l = calloc(n + 1, sizeof(char *));
        if (!l)
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < n; i++)
                if (!(l[i] = strdup(config_envs[i])))
                        r = -ENOMEM;
        pthread_mutex_unlock(&config_lock);
        if (r < 0) {
                strv_free(l);
                return r;
        }
        *ret = l;
        return 0;
}
