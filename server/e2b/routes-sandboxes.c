/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/routes-sandboxes.h"

#include <errno.h>
#include <limits.h>
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
#include "e2b/list-query.h"
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
        int r = validate_create(body, buf_str(&req->body->raw), req->body->raw.len, &p, &msg);
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", msg);

        char err[768] = "";
        _cleanup_sandbox_ struct sandbox *s = NULL;
        r = lifecycle_create(req->srv, &p, &s, err, sizeof(err));
        create_params_done(&p);
        if (r < 0)
                return route_reply_errno(req, r, err);
        snprintf(req->sandbox_id, sizeof(req->sandbox_id), "%s", s->id); /* the access log's */
        return reply_sandbox(req, 201, s, SHAPE_SANDBOX);
}

/* The checks of a route that sets a sandbox's timeout, in the order E2B answers them: an id
 * that cannot be one (404), the timeout (400), then the sandbox (404). 0 when *ret is held;
 * else the status already answered. `def` as validate_timeout's; `zero_ok`: 0 is "expire now". */
static int timeout_and_sandbox(struct request *req, int64_t def, bool zero_ok, int64_t *timeout,
                               struct sandbox **ret)
{
        const char *id = req->args.v[0];
        const cJSON *body = req->body->json;
        if (!sandbox_id_valid(id))
                return route_reply_not_found(req, id);
        const cJSON *t = body ? cJSON_GetObjectItemCaseSensitive(body, "timeout") : NULL;
        *timeout = 0;
        int r = zero_ok && cJSON_IsNumber(t) && t->valuedouble == 0
                    ? 0
                    : route_timeout(req, body, def, timeout);
        if (r != 0)
                return r;
        int status;
        *ret = route_sandbox_get(req, id, &status);
        return *ret ? 0 : status;
}

int e2b_connect(struct request *req)
{
        const cJSON *body = req->body->json;
        int64_t timeout;
        _cleanup_sandbox_ struct sandbox *s = NULL;
        /* v1 requires timeout (spec); v2 defaults to 300 s. Lenient: v1 defaults too. */
        int r = timeout_and_sandbox(req, TIMEOUT_DEFAULT_S, false, &timeout, &s);
        if (r != 0)
                return r;
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
        int64_t timeout;
        _cleanup_sandbox_ struct sandbox *s = NULL;
        /* 0 is "expire now", as on E2B: the timer kills (or, with autoPause, pauses) it */
        int r = timeout_and_sandbox(req, -1, true, &timeout, &s);
        if (r != 0)
                return r;
        r = lifecycle_set_end_at(req->srv, s, (int64_t)time(NULL) + timeout, false);
        if (r < 0)
                return http_reply_error(req, r, NULL,
                                        "the timeout could not be recorded (%s); it is unchanged",
                                        strerror(-r));
        return http_reply_204(req);
}

/* Sort context: qsort has none, and the order is per request. */
static int cmp_desc(const void *a, const void *b)
{
        const struct sandbox *x = *(struct sandbox *const *)a, *y = *(struct sandbox *const *)b;
        return list_compare(LIST_DESC, x->started_us, x->id, y->started_us, y->id);
}

static int cmp_asc(const void *a, const void *b)
{
        return -cmp_desc(a, b);
}

static bool list_wants(const struct list_query *q, const cJSON *templates, const struct sandbox *s)
{
        if (!(sandbox_is_paused(s) ? q->want_paused : q->want_running))
                return false;
        if (q->metadata && !sandbox_metadata_matches(s, q->metadata))
                return false;
        /* at or after the bound, on the same microsecond grid E2B compares on */
        if (q->started_after_set && s->started_us < q->started_after_us)
                return false;
        return !templates || list_template_matches(templates, s->template_id);
}

/* The page: the wanted sandboxes of all (sorted in q's order) past the cursor, at most
 * q->limit; *ret_next names the last one when more follow, *ret_running counts the running
 * ones wanted before the cut. */
static cJSON *list_page(const struct list_query *q, const cJSON *templates, struct sandbox **all,
                        size_t n, bool with_us, char ret_next[static LIST_CURSOR_MAX],
                        unsigned *ret_running)
{
        cJSON *arr = cJSON_CreateArray();
        const struct sandbox *last = NULL;
        unsigned taken = 0, running = 0;
        bool more = false;
        ret_next[0] = 0;
        for (size_t i = 0; arr && i < n; i++) {
                const struct sandbox *s = all[i];
                if (!list_wants(q, templates, s))
                        continue;
                running += !sandbox_is_paused(s);
                if (!list_past_cursor(q, s->started_us, s->id))
                        continue;
                if (taken == q->limit) {
                        more = true;
                        continue;
                }
                cJSON *item = sandbox_to_json(s, SHAPE_LISTED);
                if (item && with_us) /* a cluster node merging pages (cluster/cluster-http.h) */
                        cJSON_AddNumberToObject(item, "startedAtUs", (double)s->started_us);
                cJSON_AddItemToArray(arr, item);
                last = s;
                taken++;
        }
        if (more && last && list_cursor_encode(last->started_us, last->id, q->order, ret_next) < 0)
                ret_next[0] = 0;
        *ret_running = running;
        return arr;
}

/* 200 with the list and its two optional headers. */
static int reply_list(struct request *req, const char *text, const char *next, const char *total)
{
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return -ENOMEM;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        if (next)
                MHD_add_response_header(resp, "X-Next-Token", next);
        if (total)
                MHD_add_response_header(resp, "X-Total-Running", total);
        int r = http_queue(req, 200, resp);
        MHD_destroy_response(resp);
        return r;
}

static int handle_list(struct request *req, bool v2)
{
        struct list_params p = {.metadata = http_arg(req, "metadata")};
        if (v2)
                p = (struct list_params){.limit = http_arg(req, "limit"),
                                         .next_token = http_arg(req, "nextToken"),
                                         .metadata = p.metadata,
                                         .state = http_arg(req, "state"),
                                         .order = http_arg(req, "order"),
                                         .started_after = http_arg(req, "startedAfter"),
                                         .template_name = http_arg(req, "template")};
        else
                p.state = "running"; /* v1 lists running sandboxes only, newest first */
        struct list_query q;
        const char *msg = NULL;
        int r = list_query_parse(&p, &q, &msg);
        if (r < 0)
                return http_reply_error(req, r, NULL, "%s", msg);
        if (!v2)
                q.limit = UINT_MAX;

        _cleanup_json_ cJSON *templates = NULL;
        if (q.template_name[0] &&
            list_template_names(req->srv->config->state_dir, q.template_name, &templates) < 0) {
                list_query_done(&q);
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        }
        struct sandbox **all = NULL;
        size_t n = 0;
        r = registry_list(req->srv->registry, &all, &n);
        if (r < 0) {
                list_query_done(&q);
                return http_reply_error(req, r, NULL, "listing sandboxes failed");
        }
        qsort(all, n, sizeof(*all), q.order == LIST_ASC ? cmp_asc : cmp_desc);
        char next[LIST_CURSOR_MAX];
        unsigned running;
        bool with_us = req->srv->cluster && http_header(req, "Sbx-Cluster-Hop");
        _cleanup_json_ cJSON *arr = list_page(&q, templates, all, n, with_us, next, &running);
        for (size_t i = 0; i < n; i++)
                sandbox_unref(all[i]);
        free(all);
        bool want_running = q.want_running;
        list_query_done(&q);

        _cleanup_free_ char *text = arr ? cJSON_PrintUnformatted(arr) : NULL;
        if (!text)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        /* X-Total-Running only when running sandboxes were asked for (E2B's spec) */
        char total[16];
        snprintf(total, sizeof(total), "%u", running);
        return reply_list(req, text, next[0] ? next : NULL, v2 && want_running ? total : NULL);
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
