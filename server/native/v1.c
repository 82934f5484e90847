/* SPDX-License-Identifier: Apache-2.0 */
#include "native/v1.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/errors.h"
#include "lifecycle/lifecycle.h"
#include "storage/disk-pool.h"
#include "log.h"
#include "macros.h"
#include "core/validate.h"
#include "json-util.h"
#include "native-error.h"
#include "format-util.h"

int v1_reply_json(struct request *req, unsigned status, const cJSON *o, const char *hname,
                  const char *hvalue)
{
        _cleanup_free_ char *text = o ? cJSON_PrintUnformatted(o) : NULL;
        if (!text)
                return -ENOMEM;
        return http_reply_json_hdr(req, status, text, hname, hvalue);
}

int v1_reply_error(struct request *req, unsigned status, const char *code, const char *fmt, ...)
{
        char msg[1200];
        (void)FORMAT_VARARGS(msg, sizeof(msg), fmt);
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
        if (!e ||
            !cJSON_AddStringToObject(e, "code", code ? code : sbx_native_error_code((int)status)) ||
            !cJSON_AddStringToObject(e, "message", msg))
                return -ENOMEM;
        if (status >= 500 && status != 502)
                log_warning("req=%s %s %s → %u: %s", req->rid, req->method, req->path, status, msg);
        return v1_reply_json(req, status, o, NULL, NULL);
}

cJSON *v1_sandbox_json(const struct sandbox *s)
{
        char started[32], ends[32];
        cJSON *o = cJSON_CreateObject();
        rfc3339_format(sandbox_started_s(s), started);
        rfc3339_format(sandbox_get_end_at(s), ends);
        if (!o || !cJSON_AddStringToObject(o, "id", s->id) ||
            !cJSON_AddStringToObject(o, "template", s->template_id) ||
            !cJSON_AddStringToObject(o, "state", sandbox_is_paused(s) ? "paused" : "running") ||
            !cJSON_AddStringToObject(o, "started_at", started) ||
            !cJSON_AddStringToObject(o, "end_at", ends) ||
            !cJSON_AddNumberToObject(o, "cpu_count", s->cpu_count) ||
            !cJSON_AddNumberToObject(o, "memory_mb", s->memory_mb) ||
            !cJSON_AddNumberToObject(o, "disk_mb", s->disk_mb) ||
            !cJSON_AddItemToObject(o, "metadata",
                                   s->metadata ? cJSON_Duplicate(s->metadata, 1)
                                               : cJSON_CreateObject())) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}

/* ---- /v1/sandboxes ---- */

int v1_reply_not_found(struct request *req, const char *id)
{
        return v1_reply_error(req, 404, "not_found", "sandbox %s not found", id);
}

int v1_check_id_begin(struct request *req)
{
        const char *id = req->args.v[0];
        return sandbox_id_valid(id) ? 0 : v1_reply_not_found(req, id);
}

struct sandbox *v1_running_sandbox(struct request *req, const char *id, int *ret_status)
{
        struct sandbox *s = sandbox_id_valid(id) ? registry_get(req->srv->registry, id) : NULL;
        if (!s) {
                *ret_status = v1_reply_not_found(req, id);
                return NULL;
        }
        if (sandbox_is_paused(s)) { /* its agent is frozen: nothing would answer */
                sandbox_unref(s);
                *ret_status = v1_reply_error(req, 409, "sandbox_paused",
                                             "sandbox %s is paused: resume it (POST "
                                             "/v1/sandboxes/%s/resume) first",
                                             id, id);
                return NULL;
        }
        return s;
}

/* {template?, timeout?, env?, metadata?, cpu_count?, memory_mb?, disk_mb?} (parsed from text,
 * len bytes) → create_params. */
static int parse_create(const cJSON *body, const char *text, size_t len, struct create_params *p,
                        const char **msg)
{
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "template");
        int r;
        *p = (struct create_params){0};
        if ((r = validate_no_nul(text, len, msg)) < 0)
                return r;
        snprintf(p->template_id, sizeof(p->template_id), "base");
        if (t && !cJSON_IsNull(t)) {
                if (!cJSON_IsString(t) || !template_name_valid(t->valuestring)) {
                        *msg = "template must be a template name ([A-Za-z0-9._-], at most 64)";
                        return -EINVAL;
                }
                snprintf(p->template_id, sizeof(p->template_id), "%s", t->valuestring);
        }
        if ((r = validate_timeout(body, TIMEOUT_DEFAULT_S, &p->timeout_s, msg)) < 0 ||
            (r = validate_string_map(body, "metadata", &p->metadata, msg)) < 0 ||
            (r = validate_env_map(body, "env", &p->env_vars, msg)) < 0 ||
            (r = validate_sizes(body, "cpu_count", "memory_mb", "disk_mb", p, msg)) < 0) {
                create_params_done(p);
                return r;
        }
        return 0;
}

/* 429 too_many_requests with Retry-After: a limit of sbxd's (--max-sandboxes, --create-wait)
 * refused the create before anything was made, so a client may retry it after that delay. */
static int reply_busy(struct request *req, const char *msg)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
        if (!e || !cJSON_AddStringToObject(e, "code", sbx_native_error_code(429)) ||
            !cJSON_AddStringToObject(e, "message", msg))
                return -ENOMEM;
        return v1_reply_json(req, 429, o, "Retry-After", V1_RETRY_AFTER_S);
}

int v1_handle_create(struct request *req)
{
        struct create_params p;
        const char *msg = "invalid body";
        char err[768] = "";
        int r =
            parse_create(req->body->json, buf_str(&req->body->raw), req->body->raw.len, &p, &msg);
        if (r < 0)
                return v1_reply_error(req, 400, "bad_request", "%s", msg);
        _cleanup_sandbox_ struct sandbox *s = NULL;
        r = lifecycle_create(req->srv, &p, &s, err, sizeof(err));
        create_params_done(&p);
        if (r < 0 && api_error_status(r) == 429)
                return reply_busy(req, err);
        if (r < 0)
                return v1_reply_error(req, api_error_status(r), NULL, "%s", err);
        snprintf(req->sandbox_id, sizeof(req->sandbox_id), "%s", s->id); /* the access log's */
        _cleanup_json_ cJSON *o = v1_sandbox_json(s);
        return v1_reply_json(req, 201, o, NULL, NULL);
}

/* s's JSON with what its disk holds (its storage pool qgroup: "disk_used", bytes). */
static cJSON *with_disk(const struct server *srv, const struct sandbox *s)
{
        struct disk_pool_use u;
        cJSON *o = v1_sandbox_json(s);
        if (o && srv->disk_pool && disk_pool_upper_usage(srv->disk_pool, s->id, &u) >= 0)
                cJSON_AddNumberToObject(o, "disk_used", (double)u.referenced);
        return o;
}

int v1_handle_list(struct request *req)
{
        struct sandbox **all = NULL;
        size_t n = 0;
        int r = registry_list(req->srv->registry, &all, &n);
        if (r < 0)
                return v1_reply_error(req, 500, NULL, "listing sandboxes failed");
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *arr = o ? cJSON_AddArrayToObject(o, "sandboxes") : NULL;
        for (size_t i = 0; i < n; i++) {
                if (arr)
                        cJSON_AddItemToArray(arr, with_disk(req->srv, all[i]));
                sandbox_unref(all[i]);
        }
        free(all);
        return v1_reply_json(req, 200, o, NULL, NULL);
}

int v1_handle_get(struct request *req)
{
        const char *id = req->args.v[0];
        _cleanup_sandbox_ struct sandbox *s = registry_get(req->srv->registry, id);
        if (!s)
                return v1_reply_not_found(req, id);
        _cleanup_json_ cJSON *o = with_disk(req->srv, s);
        return v1_reply_json(req, 200, o, NULL, NULL);
}

int v1_handle_kill(struct request *req)
{
        const char *id = req->args.v[0];
        if (lifecycle_kill(req->srv, id) < 0)
                return v1_reply_not_found(req, id);
        return http_reply_204(req);
}

/* ---- pause and resume (lifecycle/lifecycle.h) ---- */

int v1_handle_pause(struct request *req)
{
        const char *id = req->args.v[0];
        const cJSON *body = req->body->json;
        const cJSON *m = body ? cJSON_GetObjectItemCaseSensitive(body, "keep_memory") : NULL;
        if (m && !cJSON_IsNull(m) && !cJSON_IsBool(m))
                return v1_reply_error(req, 400, "bad_request", "keep_memory must be a boolean");
        _cleanup_sandbox_ struct sandbox *s = registry_get(req->srv->registry, id);
        if (!s)
                return v1_reply_not_found(req, id);
        int r = lifecycle_pause(req->srv, s, !cJSON_IsFalse(m));
        if (r == -EBUSY)
                return v1_reply_error(req, 409, "conflict", "sandbox %s is already paused", id);
        if (r < 0)
                return v1_reply_error(req, api_error_status(r), NULL, "pausing %s failed: %s", id,
                                      strerror(-r));
        _cleanup_json_ cJSON *o = v1_sandbox_json(s);
        return v1_reply_json(req, 200, o, NULL, NULL);
}

int v1_handle_resume(struct request *req)
{
        const char *id = req->args.v[0], *msg = NULL;
        char err[512] = "";
        int64_t timeout;
        bool resumed;
        int r = validate_timeout(req->body->json, TIMEOUT_DEFAULT_S, &timeout, &msg);
        if (r < 0)
                return v1_reply_error(req, 400, "bad_request", "%s", msg);
        _cleanup_sandbox_ struct sandbox *s = registry_get(req->srv->registry, id);
        if (!s)
                return v1_reply_not_found(req, id);
        if (!sandbox_is_paused(s))
                return v1_reply_error(req, 409, "conflict", "sandbox %s is not paused", id);
        r = lifecycle_resume(req->srv, s, timeout, &resumed, err, sizeof(err));
        if (r < 0)
                return v1_reply_error(req, api_error_status(r), NULL, "resuming %s failed: %s", id,
                                      err);
        _cleanup_json_ cJSON *o = v1_sandbox_json(s);
        return v1_reply_json(req, 200, o, NULL, NULL);
}
