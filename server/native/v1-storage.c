/* SPDX-License-Identifier: Apache-2.0 */
#include "native/v1-storage.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/server-config.h"
#include "json-util.h"
#include "lifecycle/registry.h"
#include "lifecycle/sandbox.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"
#include "storage/disk-pool.h"

static const char *backend(const struct server *srv)
{
        return srv->disk_pool ? "pool" : srv->disk_images ? "image" : "tmpfs";
}

static cJSON *pool_json(const struct server *srv)
{
        struct disk_pool_space sp;
        cJSON *o = cJSON_CreateObject();
        if (!o || disk_pool_space(srv->disk_pool, &sp) < 0) {
                cJSON_Delete(o);
                return NULL;
        }
        cJSON_AddStringToObject(o, "kind", disk_pool_kind(srv->disk_pool));
        cJSON_AddStringToObject(o, "root", disk_pool_root(srv->disk_pool));
        cJSON_AddNumberToObject(o, "size", (double)sp.size);
        cJSON_AddNumberToObject(o, "used", (double)sp.used);
        cJSON_AddNumberToObject(o, "free", (double)sp.free);
        cJSON_AddNumberToObject(o, "reserve", (double)(srv->config->disk_reserve_mb << 20));
        cJSON_AddNumberToObject(o, "imageBytes", (double)sp.image_bytes);
        return o;
}

/* Each registered sandbox with its disk: its qgroup when it is on the pool. */
static cJSON *sandboxes_json(const struct server *srv)
{
        struct sandbox **all = NULL;
        size_t n = 0;
        cJSON *arr = cJSON_CreateArray();
        if (!arr || registry_list(srv->registry, &all, &n) < 0) {
                cJSON_Delete(arr);
                return NULL;
        }
        for (size_t i = 0; i < n; i++) {
                struct sandbox *s = all[i];
                struct disk_pool_use u;
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "id", s->id);
                cJSON_AddStringToObject(o, "state", sandbox_is_paused(s) ? "paused" : "running");
                cJSON_AddNumberToObject(o, "diskMB", s->disk_mb);
                if (srv->disk_pool && disk_pool_upper_usage(srv->disk_pool, s->id, &u) >= 0) {
                        cJSON_AddNumberToObject(o, "referenced", (double)u.referenced);
                        cJSON_AddNumberToObject(o, "exclusive", (double)u.exclusive);
                        cJSON_AddNumberToObject(o, "limit", (double)u.limit);
                }
                cJSON_AddItemToArray(arr, o);
                sandbox_unref(s);
        }
        free(all);
        return arr;
}

static int reply_storage(struct request *req, unsigned status)
{
        const struct server *srv = req->srv;
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "backend", backend(srv)))
                return -ENOMEM;
        if (srv->disk_pool) {
                cJSON *p = pool_json(srv), *arr = sandboxes_json(srv);
                if (!p || !arr) {
                        cJSON_Delete(p);
                        cJSON_Delete(arr);
                        return v1_reply_error(req, 500, NULL, "reading the storage pool failed");
                }
                cJSON_AddItemToObject(o, "pool", p);
                cJSON_AddItemToObject(o, "sandboxes", arr);
        }
        return v1_reply_json(req, status, o, NULL, NULL);
}

int v1_storage_get(struct request *req)
{
        return reply_storage(req, 200);
}

/* "size": a string such as "64G" (config_parse_size) or a number of bytes. */
static int parse_size(const cJSON *body, uint64_t *ret)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, "size");
        if (cJSON_IsString(v))
                return config_parse_size(v->valuestring, ret);
        if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 1e18 &&
            v->valuedouble == (double)(uint64_t)v->valuedouble) {
                *ret = (uint64_t)v->valuedouble;
                return 0;
        }
        return -EINVAL;
}

int v1_storage_grow(struct request *req)
{
        struct server *srv = req->srv;
        uint64_t size;
        if (!srv->disk_pool || strcmp(disk_pool_kind(srv->disk_pool), "image") != 0)
                return v1_reply_error(req, 409, "conflict",
                                      srv->disk_pool
                                          ? "the storage pool is the state dir's own btrfs: "
                                            "grow that file system instead"
                                          : "this server runs without a storage pool (%s disks)",
                                      backend(srv));
        if (parse_size(req->body->json, &size) < 0 || size > DISK_POOL_MAX_BYTES)
                return v1_reply_error(req, 400, "bad_request",
                                      "size: a size such as \"64G\" or \"512M\", or bytes, at "
                                      "most 64T");
        int r = disk_pool_grow(srv->disk_pool, size);
        if (r == -EINVAL)
                return v1_reply_error(req, 400, "bad_request",
                                      "size: the pool is that large already (it only grows)");
        if (r == -ENOSPC)
                return v1_reply_error(req, 507, "insufficient_storage",
                                      "the host's disk cannot hold a %llu MiB pool",
                                      (unsigned long long)(size >> 20));
        if (r < 0)
                return v1_reply_error(req, 500, NULL, "growing the storage pool: %s", strerror(-r));
        return reply_storage(req, 200);
}
