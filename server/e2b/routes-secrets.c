/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/routes-secrets.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "storage/secret-store.h"

static int format_ms(int64_t ms, char buf[static 40])
{
        struct tm tm;
        time_t t = (time_t)(ms / 1000);
        if (!gmtime_r(&t, &tm) || strftime(buf, 24, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                return -EOVERFLOW;
        snprintf(buf + strlen(buf), 16, ".%03dZ", (int)(ms % 1000));
        return 0;
}

static cJSON *secret_json(const struct secret_info *s)
{
        char c[40], u[40];
        cJSON *o = cJSON_CreateObject();
        cJSON *m = cJSON_Duplicate(s->metadata, true);
        if (!o || !m || !cJSON_AddItemToObject(o, "metadata", m) || format_ms(s->created_ms, c) ||
            format_ms(s->updated_ms, u) || !cJSON_AddStringToObject(o, "secretID", s->id) ||
            !cJSON_AddStringToObject(o, "name", s->name) ||
            !cJSON_AddNumberToObject(o, "currentVersion", (double)s->version) ||
            !cJSON_AddStringToObject(o, "createdAt", c) ||
            !cJSON_AddStringToObject(o, "updatedAt", u)) {
                if (!o || !cJSON_GetObjectItemCaseSensitive(o, "metadata"))
                        cJSON_Delete(m);
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}

static int reply_secret(struct request *req, unsigned status, struct secret_info *s)
{
        _cleanup_json_ cJSON *o = secret_json(s);
        secret_info_done(s);
        if (!o)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        return http_reply_cjson(req, status, o, NULL, NULL);
}

/* value and metadata of a body: 0, or the status of the 400 answered. */
static int body_fields(struct request *req, const char **ret_value, const cJSON **ret_meta)
{
        const cJSON *body = req->body->json;
        const cJSON *v = body ? cJSON_GetObjectItemCaseSensitive(body, "value") : NULL;
        const cJSON *m = body ? cJSON_GetObjectItemCaseSensitive(body, "metadata") : NULL;
        if (!cJSON_IsString(v))
                return http_reply_error(req, -EINVAL, NULL, "value is required (a string)");
        const char *msg = secret_value_check(v->valuestring);
        if (!msg)
                msg = secret_metadata_check(m);
        if (msg)
                return http_reply_error(req, -EINVAL, NULL, "%s", msg);
        *ret_value = v->valuestring;
        *ret_meta = m && !cJSON_IsNull(m) ? m : NULL;
        return 0;
}

int e2b_secret_create(struct request *req)
{
        const cJSON *body = req->body->json;
        const cJSON *name = body ? cJSON_GetObjectItemCaseSensitive(body, "name") : NULL;
        char lower[SECRET_NAME_MAX + 1];
        const char *msg = cJSON_IsString(name) ? secret_name_check(name->valuestring, lower)
                                               : "name is required (a string)";
        if (msg)
                return http_reply_error(req, -EINVAL, NULL, "%s", msg);
        const char *value;
        const cJSON *meta;
        int st = body_fields(req, &value, &meta);
        if (st != 0)
                return st;
        struct secret_info s;
        int r = secret_create(req->srv->secrets, lower, value, meta, &s);
        if (r == -EEXIST)
                return http_reply_error(req, r, NULL, "secret with name '%s' already exists",
                                        lower);
        if (r == -EDQUOT)
                return http_reply_error(req, -EINVAL, NULL, "too many secrets (limit %d)",
                                        SECRETS_MAX);
        if (r < 0)
                return http_reply_error(req, r, NULL, "Error when creating secret: %s",
                                        strerror(-r));
        log_info("secret %s: created ('%s')", s.id, s.name);
        return reply_secret(req, 201, &s);
}

static void infos_free(struct secret_info *a, size_t n)
{
        for (size_t i = 0; a && i < n; i++)
                secret_info_done(&a[i]);
        free(a);
}

int e2b_secret_list(struct request *req)
{
        const char *lim = http_arg(req, "limit"), *tok = http_arg(req, "nextToken");
        long limit = SECRETS_PAGE_MAX;
        if (lim) {
                char *end;
                limit = strtol(lim, &end, 10);
                if (*lim == '\0' || *end || limit < 1 || limit > SECRETS_PAGE_MAX)
                        return http_reply_error(req, -EINVAL, NULL,
                                                "limit must be an integer from 1 to %d",
                                                SECRETS_PAGE_MAX);
        }
        struct secret_info *all = NULL;
        size_t n = 0, start = 0;
        int r = secret_list(req->srv->secrets, &all, &n);
        if (r < 0)
                return http_reply_error(req, r, NULL, "Error when listing secrets");
        if (tok && *tok) { /* the cursor is the id of the first secret of the page */
                while (start < n && strcmp(all[start].id, tok) != 0)
                        start++;
                if (start == n) {
                        infos_free(all, n);
                        return http_reply_error(req, -EINVAL, NULL, "Invalid next token");
                }
        }
        size_t end = MIN(n, start + (size_t)limit);
        _cleanup_json_ cJSON *a = cJSON_CreateArray();
        for (size_t i = start; a && i < end; i++) {
                cJSON *o = secret_json(&all[i]);
                if (!o || !cJSON_AddItemToArray(a, o)) {
                        cJSON_Delete(o);
                        cJSON_Delete(TAKE_PTR(a));
                }
        }
        char next[SECRET_ID_LEN + 1] = "";
        if (end < n)
                memcpy(next, all[end].id, sizeof(next));
        infos_free(all, n);
        if (!a)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        return http_reply_cjson(req, 200, a, next[0] ? "X-Next-Token" : NULL,
                                next[0] ? next : NULL);
}

static int not_found(struct request *req)
{
        return http_reply_error(req, -ENOENT, NULL, "secret '%s' not found", req->args.v[0]);
}

int e2b_secret_get(struct request *req)
{
        struct secret_info s;
        if (secret_get(req->srv->secrets, req->args.v[0], &s) < 0)
                return not_found(req);
        return reply_secret(req, 200, &s);
}

int e2b_secret_update(struct request *req)
{
        const char *value;
        const cJSON *meta;
        int st = body_fields(req, &value, &meta);
        if (st != 0)
                return st;
        struct secret_info s;
        int r = secret_update(req->srv->secrets, req->args.v[0], value, meta, &s);
        if (r == -ENOENT)
                return not_found(req);
        if (r < 0)
                return http_reply_error(req, r, NULL, "Error when updating secret: %s",
                                        strerror(-r));
        log_info("secret %s: version %lld", s.id, (long long)s.version);
        return reply_secret(req, 200, &s);
}

int e2b_secret_delete(struct request *req)
{
        int r = secret_delete(req->srv->secrets, req->args.v[0]);
        if (r == -ENOENT)
                return not_found(req);
        if (r < 0)
                return http_reply_error(req, r, NULL, "Error when deleting secret: %s",
                                        strerror(-r));
        log_info("secret '%s': deleted", req->args.v[0]);
        return http_reply_204(req);
}
