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
#include "log.h"
#include "macros.h"
#include "core/validate.h"
#include "json-util.h"
#include "native-error.h"

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
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
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
                                             "/sandboxes/%s/resume or connect) first",
                                             id, id);
                return NULL;
        }
        return s;
}

/* {template?, timeout?, env?, metadata?} (parsed from text, len bytes) → create_params. */
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
            (r = validate_env_map(body, "env", &p->env_vars, msg)) < 0) {
                create_params_done(p);
                return r;
        }
        return 0;
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
        if (r < 0)
                return v1_reply_error(req, api_error_status(r), NULL, "%s", err);
        snprintf(req->sandbox_id, sizeof(req->sandbox_id), "%s", s->id); /* the access log's */
        _cleanup_json_ cJSON *o = v1_sandbox_json(s);
        return v1_reply_json(req, 201, o, NULL, NULL);
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
                        cJSON_AddItemToArray(arr, v1_sandbox_json(all[i]));
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
        _cleanup_json_ cJSON *o = v1_sandbox_json(s);
        return v1_reply_json(req, 200, o, NULL, NULL);
}

int v1_handle_kill(struct request *req)
{
        const char *id = req->args.v[0];
        if (lifecycle_kill(req->srv, id) < 0)
                return v1_reply_not_found(req, id);
        return http_reply_204(req);
}
