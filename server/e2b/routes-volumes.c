/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/routes-volumes.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cluster-hooks.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "storage/volume.h"

static cJSON *volume_json(const struct volume_info *v, bool token)
{
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "volumeID", v->id) ||
            !cJSON_AddStringToObject(o, "name", v->name) ||
            (token && (!cJSON_AddStringToObject(o, "token", v->token) ||
                       !cJSON_AddNumberToObject(o, "sizeMB", (double)v->size_mb)))) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}

/* sizeMB (sbx's extension): absent = VOLUME_DEFAULT_MB, else an integer in VOLUME_MIN_MB..the
 * per-sandbox disk maximum. 0, or the status of the refusal it answered. */
static int size_of(struct request *req, const cJSON *body, uint64_t *ret)
{
        uint64_t max = req->srv->config->max_disk_mb;
        const cJSON *s = body ? cJSON_GetObjectItemCaseSensitive(body, "sizeMB") : NULL;
        *ret = MIN((uint64_t)VOLUME_DEFAULT_MB, max);
        if (!s || cJSON_IsNull(s))
                return 0;
        double d = cJSON_IsNumber(s) ? s->valuedouble : -1;
        if (d != floor(d) || d < VOLUME_MIN_MB || d > (double)max)
                return http_reply_error(req, -EINVAL, NULL,
                                        "sizeMB must be an integer from %d to %llu (this "
                                        "server's limit per disk)",
                                        VOLUME_MIN_MB, (unsigned long long)max);
        *ret = (uint64_t)d;
        return 0;
}

int e2b_volume_create(struct request *req)
{
        const cJSON *body = req->body->json;
        const cJSON *name = body ? cJSON_GetObjectItemCaseSensitive(body, "name") : NULL;
        if (!cJSON_IsString(name) || !volume_name_valid(name->valuestring))
                return http_reply_error(req, -EINVAL, NULL, "Invalid volume name");
        uint64_t size_mb;
        int st = size_of(req, body, &size_mb);
        if (st != 0)
                return st;
        const struct disk_policy pol = {
            .overcommit = req->srv->config->disk_overcommit,
            .reserve_bytes = req->srv->config->disk_reserve_mb << 20,
        };
        char err[512] = "";
        struct volume_info v;
        int r = volume_create(req->srv->volumes, name->valuestring, size_mb, &pol, &v, err,
                              sizeof(err));
        if (r == -EEXIST) /* E2B answers 400 here, not 409 */
                return http_reply_error(req, -EINVAL, NULL, "Volume with name '%s' already exists",
                                        name->valuestring);
        if (r == -EDQUOT)
                return http_reply_error(req, -EINVAL, NULL, "too many volumes (limit %d)",
                                        VOLUMES_MAX);
        if (r < 0) {
                log_error_errno(r, "volume '%s': create: %s (%m)", name->valuestring, err);
                return http_reply_error(req, r, NULL, "%s",
                                        err[0] ? err : "Error when creating volume");
        }
        /* --cluster: recorded in etcd before the create answers (the name cluster-wide) */
        const struct cluster_hooks *h = req->srv->cluster_hooks;
        r = h ? h->volume_created(req->srv, v.id, v.name) : 0;
        if (r < 0) {
                unsigned users = 0;
                (void)volume_delete(req->srv->volumes, v.id, &users);
                if (r == -EEXIST)
                        return http_reply_error(req, -EINVAL, NULL,
                                                "Volume with name '%s' already exists", v.name);
                return http_reply_error(req, -EAGAIN, NULL,
                                        "cluster store unavailable: the volume could not be "
                                        "recorded (%s)",
                                        strerror(-r));
        }
        log_info("volume %s: created ('%s', %llu MiB)", v.id, v.name,
                 (unsigned long long)v.size_mb);
        _cleanup_json_ cJSON *o = volume_json(&v, true);
        cJSON_DeleteItemFromObjectCaseSensitive(o, "sizeMB");
        return http_reply_cjson(req, 201, o, NULL, NULL);
}

int e2b_volume_list(struct request *req)
{
        _cleanup_free_ struct volume_info *all = NULL;
        size_t n;
        int r = volume_list(req->srv->volumes, &all, &n);
        if (r < 0)
                return http_reply_error(req, r, NULL, "Error when getting volumes");
        _cleanup_json_ cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; a && i < n; i++) {
                cJSON *o = volume_json(&all[i], false);
                if (!o || !cJSON_AddItemToArray(a, o)) {
                        cJSON_Delete(o);
                        return http_reply_error(req, -ENOMEM, NULL, "out of memory");
                }
        }
        return http_reply_cjson(req, 200, a, NULL, NULL);
}

/* The {id} of the path: 0 when found, else the status of the 400 / 404 answered here. */
static int lookup(struct request *req, struct volume_info *v)
{
        const char *id = req->args.v[0];
        if (!volume_id_valid(id))
                return http_reply_error(req, -EINVAL, NULL, "Invalid volume ID");
        if (volume_get(req->srv->volumes, id, v) < 0)
                return http_reply_error(req, -ENOENT, NULL, "Volume not found");
        return 0;
}

int e2b_volume_get(struct request *req)
{
        struct volume_info v;
        int st = lookup(req, &v);
        if (st != 0)
                return st;
        _cleanup_json_ cJSON *o = volume_json(&v, true);
        return http_reply_cjson(req, 200, o, NULL, NULL);
}

int e2b_volume_delete(struct request *req)
{
        struct volume_info v;
        int st = lookup(req, &v);
        if (st != 0)
                return st;
        unsigned users = 0;
        int r = volume_delete(req->srv->volumes, v.id, &users);
        if (r == -EBUSY)
                return http_reply_error(req, r, NULL,
                                        "volume '%s' is in use (mounted by %u sandboxes): kill "
                                        "them first",
                                        v.name, users);
        if (r == -ENOENT)
                return http_reply_error(req, r, NULL, "Volume not found");
        if (r < 0)
                return http_reply_error(req, r, NULL, "Error when deleting volume: %s",
                                        strerror(-r));
        if (req->srv->cluster_hooks) /* --cluster: its keys in etcd */
                req->srv->cluster_hooks->volume_deleted(req->srv, v.id, v.name);
        log_info("volume %s: deleted ('%s')", v.id, v.name);
        return http_reply_204(req);
}
