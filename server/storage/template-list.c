/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/template-list.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/validate.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "storage/template.h"

#define TEMPLATE_JSON_MAX (1024 * 1024)

static const char *kind_of(const cJSON *t)
{
        if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "build")))
                return "built";
        if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "image")))
                return "image";
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(t, "layers"), *l;
        bool all_store = cJSON_GetArraySize(layers) > 0;
        cJSON_ArrayForEach(l, layers)
        {
                if (!cJSON_IsString(l) || strncmp(l->valuestring, "sha256:", 7) != 0)
                        all_store = false;
        }
        return all_store ? "snapshot" : "builtin";
}

static double num_or(const cJSON *t, const char *k, double def)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, k);
        return cJSON_IsNumber(v) && v->valuedouble > 0 ? v->valuedouble : def;
}

static void copy_str(cJSON *to, const char *name, const cJSON *from, const char *key)
{
        const cJSON *v = from ? cJSON_GetObjectItemCaseSensitive(from, key) : NULL;
        if (cJSON_IsString(v))
                cJSON_AddStringToObject(to, name, v->valuestring);
}

/* The summary of template name, NULL when its record is unreadable. */
static cJSON *summary(int tfd, const char *name)
{
        char path[300];
        snprintf(path, sizeof(path), "%s/template.json", name);
        _cleanup_close_ int fd = openat(tfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (fd < 0 || read_all(fd, TEMPLATE_JSON_MAX, &text, &len) < 0)
                return NULL;
        _cleanup_json_ cJSON *t = cJSON_ParseWithLength(text, len);
        if (!cJSON_IsObject(t))
                return NULL;
        cJSON *o = cJSON_CreateObject();
        if (!o)
                return NULL;
        const cJSON *build = cJSON_GetObjectItemCaseSensitive(t, "build");
        cJSON_AddStringToObject(o, "name", name);
        cJSON_AddStringToObject(o, "kind", kind_of(t));
        cJSON_AddNumberToObject(o, "cpuCount", num_or(t, "cpuCount", TEMPLATE_DEFAULT_CPU));
        cJSON_AddNumberToObject(o, "memoryMB", num_or(t, "memoryMB", TEMPLATE_DEFAULT_MEMORY_MB));
        cJSON_AddNumberToObject(o, "diskSizeMB", num_or(t, "diskSizeMB", TEMPLATE_DEFAULT_DISK_MB));
        cJSON_AddNumberToObject(o, "layers",
                                cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, "layers")));
        copy_str(o, "templateID", build, "templateID");
        copy_str(o, "buildID", build, "buildID");
        copy_str(o, "base", build, "base");
        return o;
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int template_list(const char *state_dir, cJSON **ret)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/templates", state_dir);
        _cleanup_json_ cJSON *arr = cJSON_CreateArray();
        if (!arr)
                return -ENOMEM;
        _cleanup_close_ int tfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = tfd >= 0 ? fdopendir(dup(tfd)) : NULL;
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        int r = 0;
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.' || !template_name_valid(de->d_name))
                        continue;
                if (n == TEMPLATE_LIST_MAX) {
                        log_warning("templates: more than %d, the rest left out of the list",
                                    TEMPLATE_LIST_MAX);
                        break;
                }
                char **nn = realloc(names, (n + 1) * sizeof(*names));
                if (!nn || !(nn[n] = strdup(de->d_name))) {
                        names = nn ? nn : names;
                        r = -ENOMEM;
                        break;
                }
                names = nn;
                n++;
        }
        if (d)
                closedir(d);
        if (n > 1)
                qsort(names, n, sizeof(*names), cmp_names);
        for (size_t i = 0; i < n; i++) {
                cJSON *o = r >= 0 ? summary(tfd, names[i]) : NULL;
                if (o)
                        cJSON_AddItemToArray(arr, o);
                free(names[i]);
        }
        free(names);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(arr);
        return 0;
}
