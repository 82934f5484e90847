/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/routes-sandboxes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/keys.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "core/query.h"
#include "e2b/files-signature.h"
#include "e2b/routes-lifecycle.h"
#include "lifecycle/sampler.h"
#include "core/validate.h"
#include "json-util.h"

static int reply_sandbox(struct request *req, unsigned status, const struct sandbox *s,
                         enum sandbox_shape shape)
{
        _cleanup_json_ cJSON *o = sandbox_to_json(s, shape);
        return http_reply_cjson(req, status, o, NULL, NULL);
}

int e2b_create(struct request *req)
{
        const cJSON *body = req->body->json;
        struct create_params p = {};
        const char *msg = NULL;
        int r = validate_create(body, &p, &msg);
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", msg);

        char err[768] = "";
        _cleanup_sandbox_ struct sandbox *s = NULL;
        r = lifecycle_create(req->srv, &p, &s, err, sizeof(err));
        create_params_done(&p);
        if (r < 0)
                return route_reply_errno(req, r, err);
        return reply_sandbox(req, 201, s, SHAPE_SANDBOX);
}

int e2b_connect(struct request *req)
{
        const char *id = req->args.v[0];
        const cJSON *body = req->body->json;
        if (!sandbox_id_valid(id))
                return route_reply_not_found(req, id);
        int64_t timeout;
        const char *msg = NULL;
        /* v1 requires timeout (spec); v2 defaults to 300 s. Lenient: v1 defaults too. */
        int r = validate_timeout(body, TIMEOUT_DEFAULT_S, &timeout, &msg);
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", msg);
        int status;
        _cleanup_sandbox_ struct sandbox *s = route_sandbox_get(req, id, &status);
        if (!s)
                return status;
        /* {"memory": false} (the SDK's onResume "reboot"): start fresh on the sandbox's files */
        const cJSON *m = body ? cJSON_GetObjectItemCaseSensitive(body, "memory") : NULL;
        if (m && !cJSON_IsNull(m) && !cJSON_IsBool(m))
                return http_reply_error(req, -EINVAL, NULL, "memory must be a boolean");
        if (cJSON_IsFalse(m) && (r = lifecycle_drop_memory(req->srv, s)) < 0)
                return http_reply_error(req, r, NULL, "dropping the paused memory failed: %s",
                                        strerror(-r));
        /* running: extend endAt (200); paused: resume, endAt = now + timeout (201) */
        char err[512] = "";
        bool resumed = false;
        r = lifecycle_resume(req->srv, s, timeout, &resumed, err, sizeof(err));
        if (r < 0)
                return http_reply_error(req, r, NULL, "resuming failed: %s", err);
        return reply_sandbox(req, resumed ? 201 : 200, s, SHAPE_SANDBOX);
}

int e2b_timeout(struct request *req)
{
        const char *id = req->args.v[0];
        const cJSON *body = req->body->json;
        if (!sandbox_id_valid(id))
                return route_reply_not_found(req, id);
        int64_t timeout = 0;
        const char *msg = NULL;
        /* 0 is "expire now", as on E2B: the timer kills (or, with autoPause, pauses) it */
        const cJSON *t = body ? cJSON_GetObjectItemCaseSensitive(body, "timeout") : NULL;
        int r = cJSON_IsNumber(t) && t->valuedouble == 0
                    ? 0
                    : validate_timeout(body, -1, &timeout, &msg);
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", msg);
        int status;
        _cleanup_sandbox_ struct sandbox *s = route_sandbox_get(req, id, &status);
        if (!s)
                return status;
        r = lifecycle_set_end_at(req->srv, s, (int64_t)time(NULL) + timeout, false);
        if (r < 0)
                return http_reply_error(req, r, NULL,
                                        "the timeout could not be recorded (%s); it is unchanged",
                                        strerror(-r));
        return http_reply_204(req);
}

void list_query_done(struct list_query *q)
{
        cJSON_Delete(q->metadata);
        q->metadata = NULL;
}

static int parse_metadata_filter(const char *s, cJSON **ret, const char **ret_msg)
{
        cJSON *o = cJSON_CreateObject();
        size_t pos = 0;
        int r;
        char *k, *v;
        if (!o)
                return -ENOMEM;
        while ((r = query_next_pair(s, &pos, &k, &v)) > 0) {
                cJSON_AddStringToObject(o, k, v);
                free(k);
                free(v);
        }
        if (r < 0) {
                cJSON_Delete(o);
                *ret_msg = "invalid metadata filter";
                return -EINVAL;
        }
        *ret = o;
        return 0;
}

int list_query_parse(const char *limit, const char *next_token, const char *metadata,
                     const char *state, struct list_query *ret, const char **ret_msg)
{
        struct list_query q = {.limit = 100, .want_running = true, .want_paused = true};
        char *end;
        if (limit) {
                long l = strtol(limit, &end, 10);
                if (!*limit || *end || l < 1 || l > 100) {
                        *ret_msg = "limit must be between 1 and 100";
                        return -EINVAL;
                }
                q.limit = (unsigned)l;
        }
        if (next_token && *next_token) {
                errno = 0;
                long long t = strtoll(next_token, &end, 10);
                if (end == next_token || *end != '.' || errno || t < 0 ||
                    strlen(end + 1) >= sizeof(q.after_id) || !sandbox_id_valid(end + 1)) {
                        *ret_msg = "invalid nextToken";
                        return -EINVAL;
                }
                q.after = true;
                q.after_started = t;
                snprintf(q.after_id, sizeof(q.after_id), "%s", end + 1);
        }
        if (state && *state) {
                q.want_running = q.want_paused = false;
                for (const char *p = state; *p;) {
                        size_t l = strcspn(p, ",");
                        if (l == 7 && strncmp(p, "running", 7) == 0)
                                q.want_running = true;
                        else if (l == 6 && strncmp(p, "paused", 6) == 0)
                                q.want_paused = true;
                        else {
                                *ret_msg = "state must be running or paused";
                                return -EINVAL;
                        }
                        p += l;
                        if (*p == ',')
                                p++;
                }
        }
        if (metadata && *metadata) {
                int r = parse_metadata_filter(metadata, &q.metadata, ret_msg);
                if (r < 0)
                        return r;
        }
        *ret = q;
        return 0;
}

static int handle_list(struct request *req, bool v2)
{
        struct list_query q;
        const char *msg = NULL;
        int r = list_query_parse(v2 ? http_arg(req, "limit") : NULL,
                                 v2 ? http_arg(req, "nextToken") : NULL, http_arg(req, "metadata"),
                                 v2 ? http_arg(req, "state") : NULL, &q, &msg);
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", msg);

        struct sandbox **all = NULL;
        size_t n = 0;
        int64_t last_started = 0;
        char last_id[32] = "";
        r = registry_list(req->srv->registry, &all, &n);
        if (r < 0) {
                list_query_done(&q);
                return http_reply_error(req, r, NULL, "listing sandboxes failed");
        }
        _cleanup_json_ cJSON *arr = cJSON_CreateArray();
        bool more = false;
        for (size_t i = 0; i < n; i++) {
                struct sandbox *s = all[i];
                bool want = sandbox_is_paused(s) ? q.want_paused : q.want_running;
                bool past = !q.after || s->started_us > q.after_started ||
                            (s->started_us == q.after_started && strcmp(s->id, q.after_id) > 0);
                if (want && past && (!q.metadata || sandbox_metadata_matches(s, q.metadata))) {
                        if ((unsigned)cJSON_GetArraySize(arr) >= q.limit && v2)
                                more = true;
                        else if (arr) {
                                cJSON_AddItemToArray(arr, sandbox_to_json(s, SHAPE_LISTED));
                                last_started = s->started_us;
                                snprintf(last_id, sizeof(last_id), "%s", s->id);
                        }
                }
                sandbox_unref(s);
        }
        free(all);
        list_query_done(&q);

        _cleanup_free_ char *text = arr ? cJSON_PrintUnformatted(arr) : NULL;
        if (!text)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        if (!more)
                return http_reply_json(req, 200, text);
        char tok[64];
        snprintf(tok, sizeof(tok), "%lld.%s", (long long)last_started, last_id);
        return http_reply_json_hdr(req, 200, text, "X-Next-Token", tok);
}

int e2b_list_v1(struct request *req)
{
        return handle_list(req, false);
}

int e2b_list_v2(struct request *req)
{
        return handle_list(req, true);
}

int e2b_get(struct request *req)
{
        int status;
        _cleanup_sandbox_ struct sandbox *s = route_sandbox_get(req, req->args.v[0], &status);
        return s ? reply_sandbox(req, 200, s, SHAPE_DETAIL) : status;
}

int e2b_kill(struct request *req)
{
        const char *id = req->args.v[0];
        if (!sandbox_id_valid(id) || lifecycle_kill(req->srv, id) < 0)
                return route_reply_not_found(req, id);
        return http_reply_204(req);
}

int e2b_files(struct request *req)
{
        enum files_auth a =
            files_signature_refusal(req->srv->registry, req->method, req->path, req->target);
        if (a == FILES_AUTH_MISSING)
                return http_reply_error(req, -ENOENT, NULL, "%s %s: no such route", req->method,
                                        req->path);
        if (a == FILES_AUTH_SIGNATURE || a == FILES_AUTH_HEADER)
                a = FILES_AUTH_INVALID; /* a sandbox registered meanwhile: the URL named none */
        return http_reply_error(req, files_auth_errno(a), NULL, "%s", files_auth_message(a));
}
