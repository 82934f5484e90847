/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/routes-lifecycle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/errors.h"
#include "e2b/routes-templates.h"
#include "lifecycle/lifecycle-state.h"
#include "lifecycle/lifecycle.h"
#include "lifecycle/pool.h"
#include "log.h"
#include "macros.h"
#include "lifecycle/sampler.h"
#include "lifecycle/tombstone.h"
#include "lifecycle/snapshot.h"
#include "core/stats.h"
#include "core/validate.h"
#include "json-util.h"
#include "storage/disk-image.h"
#include "storage/disk-pool.h"

#define RETRY_AFTER_S "1"

int route_reply_errno(struct request *req, int r, const char *msg)
{
        if (r != -EDQUOT && r != -EAGAIN) /* a limit of sbxd's, or templates being built */
                return http_reply_error(req, r, NULL, "%s", msg);
        unsigned status;
        _cleanup_free_ char *body = NULL;
        if (api_error_build(r, NULL, msg, &status, &body) < 0)
                return -ENOMEM;
        return http_reply_json_hdr(req, status, body, "Retry-After", RETRY_AFTER_S);
}

int route_reply_not_found(struct request *req, const char *id)
{
        char why[96];
        if (tombstone_get(id, why, sizeof(why)))
                return http_reply_error(req, -ENOENT, NULL, "sandbox \"%s\" was removed: %s", id,
                                        why);
        return http_reply_error(req, -ENOENT, NULL,
                                "sandbox \"%s\" doesn't exist or you don't have access to it", id);
}

struct sandbox *route_sandbox_get(struct request *req, const char *id, int *ret_status)
{
        struct sandbox *s = sandbox_id_valid(id) ? registry_get(req->srv->registry, id) : NULL;
        if (!s)
                *ret_status = route_reply_not_found(req, id);
        return s;
}

int route_timeout(struct request *req, const cJSON *body, int64_t def, int64_t *ret)
{
        const char *msg = NULL;
        int r = validate_timeout(body, def, ret, &msg);
        return r < 0 ? http_reply_error(req, r, NULL, "%s", msg) : 0;
}

static int64_t arg_unix(struct request *req, const char *name)
{
        const char *v = http_arg(req, name);
        return v ? strtoll(v, NULL, 10) : 0;
}

static int handle_resume(struct request *req, struct sandbox *s, const cJSON *body)
{
        int64_t timeout;
        int r = route_timeout(req, body, TIMEOUT_DEFAULT_S, &timeout);
        if (r != 0)
                return r;
        if (!sandbox_is_paused(s))
                return http_reply_error(req, -EBUSY, NULL, "sandbox \"%s\" is not paused", s->id);
        char err[512] = "";
        bool resumed;
        r = lifecycle_resume(req->srv, s, timeout, &resumed, err, sizeof(err));
        if (r < 0)
                return http_reply_error(req, r, NULL, "resuming failed: %s", err);
        _cleanup_json_ cJSON *o = sandbox_to_json(s, SHAPE_SANDBOX);
        return http_reply_cjson(req, 201, o, NULL, NULL);
}

static int handle_refresh(struct request *req, struct sandbox *s, const cJSON *body)
{
        const cJSON *d = body ? cJSON_GetObjectItemCaseSensitive(body, "duration") : NULL;
        double v = cJSON_IsNumber(d) ? d->valuedouble : d ? -1 : 0;
        if (v < 0 || v > 3600 || v != (double)(int64_t)v)
                return http_reply_error(req, -EINVAL, NULL,
                                        "duration must be an integer between 0 and 3600");
        int r = lifecycle_set_end_at(req->srv, s, (int64_t)time(NULL) + (int64_t)v, true);
        if (r < 0)
                return http_reply_error(req, r, NULL,
                                        "the refresh could not be recorded (%s); the timeout is "
                                        "unchanged",
                                        strerror(-r));
        return http_reply_204(req);
}

static int handle_metrics(struct request *req, struct sandbox *s, const cJSON *body)
{
        int64_t start = arg_unix(req, "start"), end = arg_unix(req, "end");
        _cleanup_json_ cJSON *arr = sampler_metrics_json(s, 0, 0);
        if (cJSON_GetArraySize(arr) == 0) { /* nothing sampled yet: one sample now */
                sampler_sample(req->srv, s);
        }
        cJSON_Delete(arr);
        arr = sampler_metrics_json(s, start, end);
        return http_reply_cjson(req, 200, arr, NULL, NULL);
}

static int handle_snapshot(struct request *req, struct sandbox *s, const cJSON *body)
{
        const cJSON *n = body ? cJSON_GetObjectItemCaseSensitive(body, "name") : NULL;
        if (n && !cJSON_IsNull(n) && !cJSON_IsString(n))
                return http_reply_error(req, -EINVAL, NULL, "name must be a string");
        const char *name = cJSON_IsString(n) && n->valuestring[0] ? n->valuestring : NULL;
        char id[SNAPSHOT_ID_MAX], err[256] = "";
        int r = snapshot_create(req->srv, s, name, false, id, err, sizeof(err));
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", err);
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "snapshotID", id);
        cJSON *names = cJSON_AddArrayToObject(o, "names");
        if (name)
                cJSON_AddItemToArray(names, cJSON_CreateString(name));
        return http_reply_cjson(req, 201, o, NULL, NULL);
}

static int handle_fork(struct request *req, struct sandbox *s, const cJSON *body)
{
        int64_t timeout;
        int r = route_timeout(req, body, TIMEOUT_DEFAULT_S, &timeout);
        if (r != 0)
                return r;
        const cJSON *c = body ? cJSON_GetObjectItemCaseSensitive(body, "count") : NULL;
        double count = cJSON_IsNumber(c) ? c->valuedouble : (c && !cJSON_IsNull(c)) ? -1 : 1;
        if (count < 1 || count > FORK_MAX_COUNT || count != (double)(int)count)
                return http_reply_error(req, -EINVAL, NULL, "count must be between 1 and %d",
                                        FORK_MAX_COUNT);
        char err[256] = "";
        _cleanup_json_ cJSON *arr = NULL;
        r = snapshot_fork(req->srv, s, (unsigned)count, timeout, &arr, err, sizeof(err));
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", err[0] ? err : "fork failed");
        return http_reply_cjson(req, 201, arr, NULL, NULL);
}

int e2b_snapshot_list(struct request *req)
{
        const char *lim = http_arg(req, "limit"), *tok = http_arg(req, "nextToken");
        char *end;
        long limit = lim ? strtol(lim, &end, 10) : 100;
        if (lim && (*end || limit < 1 || limit > 100))
                return http_reply_error(req, -EINVAL, NULL, "limit must be between 1 and 100");
        _cleanup_json_ cJSON *arr = NULL;
        char next[64];
        int r = snapshot_list(req->srv, http_arg(req, "sandboxID"), http_arg(req, "name"), tok,
                              (size_t)limit, &arr, next);
        if (r == -EINVAL)
                return http_reply_error(req, r, NULL, "invalid nextToken");
        if (r < 0)
                return http_reply_error(req, r, NULL, "listing snapshots failed");
        return http_reply_cjson(req, 200, arr, next[0] ? "X-Next-Token" : NULL,
                                next[0] ? next : NULL);
}

int e2b_template_delete(struct request *req)
{
        int b = e2b_build_delete(req);
        if (b != -ENOENT)
                return b;
        if (!template_name_valid(req->args.v[0]))
                return http_reply_error(req, -ENOENT, NULL, "template '%s' not found",
                                        req->args.v[0]);
        int r = snapshot_delete(req->srv, req->args.v[0]);
        if (r == -ENOENT)
                return http_reply_error(req, r, NULL, "template '%s' not found", req->args.v[0]);
        if (r == -EPERM)
                return http_reply_error(req, -EINVAL, NULL,
                                        "template '%s' is not a snapshot or a template built "
                                        "through the template API; the built-in ones are "
                                        "managed with templates/build.sh",
                                        req->args.v[0]);
        return r < 0 ? http_reply_error(req, r, NULL, "deleting failed") : http_reply_204(req);
}

static void count_sandboxes(struct server *srv, struct stats_gauges *g)
{
        struct sandbox **all = NULL;
        size_t n = 0;
        if (registry_list(srv->registry, &all, &n) >= 0) {
                for (size_t i = 0; i < n; i++) {
                        struct disk_pool_use u;
                        g->paused += sandbox_is_paused(all[i]);
                        if (srv->disk_pool &&
                            disk_pool_upper_usage(srv->disk_pool, all[i]->id, &u) >= 0) {
                                g->pool_referenced += u.referenced;
                                g->pool_exclusive += u.exclusive;
                        }
                        sandbox_unref(all[i]);
                }
                free(all);
        }
        struct disk_pool_space sp;
        g->disk_backend = srv->disk_pool ? "pool" : srv->disk_images ? "image" : "tmpfs";
        if (srv->disk_pool && disk_pool_space(srv->disk_pool, &sp) >= 0) {
                g->pool_size = sp.size;
                g->pool_free = sp.free;
                g->pool_used = sp.used;
        }
        g->running = n - g->paused;
        g->pool = lifecycle_pool_ready(srv);
        g->starting = lifecycle_starting(srv);
        struct disk_usage u;
        if (disk_image_usage(srv->config->state_dir, &u) >= 0) {
                g->disk_free = u.free;
                g->disk_promised = u.promised;
                g->disk_used = u.used;
        }
        g->disk_reserve = srv->config->disk_reserve_mb << 20;
}

int e2b_prometheus(struct request *req)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        struct stats_gauges g = {0};
        count_sandboxes(req->srv, &g);
        if (stats_render(&g, &text, &len) < 0)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        return http_reply_bytes(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len,
                                NULL, NULL);
}

/* A route on /sandboxes/{id}/...: the sandbox first (404), then op. */
static int with_sandbox(struct request *req,
                        int (*op)(struct request *req, struct sandbox *s, const cJSON *body))
{
        int status;
        _cleanup_sandbox_ struct sandbox *s = route_sandbox_get(req, req->args.v[0], &status);
        return s ? op(req, s, req->body->json) : status;
}

static int handle_pause(struct request *req, struct sandbox *s, const cJSON *body)
{
        /* {"memory": false}: a filesystem-only pause (the SDK's keepMemory: false) */
        const cJSON *m = body ? cJSON_GetObjectItemCaseSensitive(body, "memory") : NULL;
        if (m && !cJSON_IsNull(m) && !cJSON_IsBool(m))
                return http_reply_error(req, -EINVAL, NULL, "memory must be a boolean");
        int r = lifecycle_pause(req->srv, s, !cJSON_IsFalse(m));
        if (r == -EBUSY)
                return http_reply_error(req, r, NULL, "sandbox \"%s\" is already paused", s->id);
        return r < 0 ? http_reply_error(req, r, NULL, "pausing failed: %s", strerror(-r))
                     : http_reply_204(req);
}

/* The E2B routes on one sandbox: each an op above, behind the sandbox lookup. */
#define SANDBOX_ROUTE(name, op)                                                                    \
        int name(struct request *req)                                                              \
        {                                                                                          \
                return with_sandbox(req, op);                                                      \
        }

SANDBOX_ROUTE(e2b_pause, handle_pause)
SANDBOX_ROUTE(e2b_resume, handle_resume)
SANDBOX_ROUTE(e2b_refresh, handle_refresh)
SANDBOX_ROUTE(e2b_metrics, handle_metrics)
SANDBOX_ROUTE(e2b_snapshot_create, handle_snapshot)
SANDBOX_ROUTE(e2b_fork, handle_fork)
