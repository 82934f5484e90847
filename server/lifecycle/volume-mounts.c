/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/volume-mounts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macros.h"
#include "storage/volume.h"

/* E2B's isValidMountPath (empty, absolute, clean), then what the jailer keeps for itself. */
static const char *path_problem(const char *p)
{
        if (!p[0])
                return "path cannot be empty";
        if (p[0] != '/')
                return "path must be absolute";
        if (!sbx_jail_path_valid(p, true))
                return "path must not contain any '.' or '..' components";
        if (!sbx_jail_bind_target_valid(p))
                return "reserved";
        return NULL;
}

static void add_reason(char *msg, size_t len, size_t *o, int i, const char *reason)
{
        if (*o < len)
                *o += (size_t)snprintf(msg + *o, len - *o, "\n\t- volume mount #%d: %s", i, reason);
}

int volume_mounts_resolve(struct server *srv, const cJSON *mounts, cJSON **ret, char *errmsg,
                          size_t errlen)
{
        char msg[2048] = "invalid mounts:";
        size_t o = strlen(msg);
        int i = 0, bad = 0;
        const cJSON *m;
        _cleanup_json_ cJSON *out = cJSON_CreateArray();
        if (!out)
                return -ENOMEM;
        cJSON_ArrayForEach(m, mounts)
        {
                const char *name = cJSON_GetObjectItemCaseSensitive(m, "name")->valuestring;
                const char *path = cJSON_GetObjectItemCaseSensitive(m, "path")->valuestring;
                struct volume_info v;
                const char *why = NULL;
                bool dup = false;
                const cJSON *prev;
                cJSON_ArrayForEach(prev, out)
                {
                        const cJSON *pp = cJSON_GetObjectItemCaseSensitive(prev, "path");
                        dup = dup || strcmp(pp->valuestring, path) == 0;
                }
                char reason[256] = "";
                if (!volume_name_valid(name) || volume_find_name(srv->volumes, name, &v) < 0)
                        snprintf(reason, sizeof(reason), "volume '%s' not found", name);
                else if ((why = path_problem(path)) && strcmp(why, "reserved") == 0)
                        snprintf(reason, sizeof(reason), "path '%s' is reserved", path);
                else if (why)
                        snprintf(reason, sizeof(reason), "%s", why);
                else if (dup)
                        snprintf(reason, sizeof(reason), "path '%s' is already used", path);
                if (reason[0]) {
                        add_reason(msg, sizeof(msg), &o, i, reason);
                        bad++;
                } else {
                        cJSON *e = cJSON_CreateObject();
                        if (!e || !cJSON_AddItemToArray(out, e) ||
                            !cJSON_AddStringToObject(e, "name", name) ||
                            !cJSON_AddStringToObject(e, "path", path) ||
                            !cJSON_AddStringToObject(e, "volumeID", v.id))
                                return -ENOMEM;
                }
                i++;
        }
        if (bad) {
                snprintf(errmsg, errlen, "%s", msg);
                return -EINVAL;
        }
        *ret = TAKE_PTR(out);
        return 0;
}

int volume_mounts_acquire(struct server *srv, struct sandbox *s, char *errmsg, size_t errlen)
{
        const cJSON *m;
        cJSON_ArrayForEach(m, s->volume_mounts)
        {
                char mnt[4096];
                const char *id = cJSON_GetObjectItemCaseSensitive(m, "volumeID")->valuestring;
                const char *name = cJSON_GetObjectItemCaseSensitive(m, "name")->valuestring;
                int r = volume_acquire(srv->volumes, id, false, mnt, sizeof(mnt));
                if (r == -ENOENT) {
                        snprintf(errmsg, errlen,
                                 "invalid mounts:\n\t- volume mount #%u: volume "
                                 "'%s' not found",
                                 s->volumes_held, name);
                        return -EINVAL;
                }
                if (r < 0) {
                        snprintf(errmsg, errlen, "sandbox start failed at volume '%s': %s", name,
                                 strerror(-r));
                        return r;
                }
                s->volumes_held++;
        }
        return 0;
}

void volume_mounts_release(struct server *srv, struct sandbox *s)
{
        for (unsigned i = 0; i < s->volumes_held; i++) {
                const cJSON *m = cJSON_GetArrayItem(s->volume_mounts, (int)i);
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "volumeID");
                if (cJSON_IsString(id))
                        volume_release(srv->volumes, id->valuestring, false);
        }
        s->volumes_held = 0;
}

int volume_mounts_spec(const struct server *srv, const struct sandbox *s,
                       struct sbx_jail_spec *spec)
{
        int n = cJSON_GetArraySize(s->volume_mounts);
        if (n == 0)
                return 0;
        spec->volumes = calloc((size_t)n, sizeof(*spec->volumes));
        if (!spec->volumes)
                return -ENOMEM;
        const cJSON *m;
        cJSON_ArrayForEach(m, s->volume_mounts)
        {
                char mnt[4096];
                struct sbx_jail_volume *v = &spec->volumes[spec->n_volumes];
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "volumeID");
                const cJSON *path = cJSON_GetObjectItemCaseSensitive(m, "path");
                if (!cJSON_IsString(id) || !cJSON_IsString(path) ||
                    volume_mount_path(srv->config->state_dir, id->valuestring, mnt, sizeof(mnt)) <
                        0)
                        return -EINVAL;
                spec->n_volumes++;
                if (!(v->source = strdup(mnt)) || !(v->target = strdup(path->valuestring)))
                        return -ENOMEM;
        }
        return 0;
}
