/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/list-query.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fd-util.h"
#include "json-util.h"
#include "macros.h"
#include "storage/json-record.h"
#include "url-util.h"

/* E2B checks these parameters against its OpenAPI spec before its handler runs; its error
 * messages start the same way (kin-openapi's RequestError, first line). */
#define PARAM_ERROR(name, what)                                                                    \
        "validation error: error in openapi3filter.RequestError: parameter \"" name                \
        "\" in query has an error: " what

#define CURSOR_ASC_SUFFIX "__asc"
#define TEMPLATE_JSON_MAX (1024 * 1024)

static bool set(const char *s)
{
        return s && *s;
}

static int parse_limit(const char *s, unsigned *ret, const char **ret_msg)
{
        char *end;
        errno = 0;
        long l = strtol(s, &end, 10);
        if (end == s || *end || errno) {
                *ret_msg = PARAM_ERROR("limit", "value is not an integer");
                return -EINVAL;
        }
        if (l < 1) {
                *ret_msg = PARAM_ERROR("limit", "number must be at least 1");
                return -EINVAL;
        }
        if (l > LIST_MAX_LIMIT) {
                *ret_msg = PARAM_ERROR("limit", "number must be at most 100");
                return -EINVAL;
        }
        *ret = (unsigned)l;
        return 0;
}

static int parse_state(const char *state, struct list_query *q, const char **ret_msg)
{
        q->want_running = q->want_paused = false;
        for (const char *p = state;;) {
                size_t l = strcspn(p, ",");
                if (l == 7 && strncmp(p, "running", 7) == 0)
                        q->want_running = true;
                else if (l == 6 && strncmp(p, "paused", 6) == 0)
                        q->want_paused = true;
                else {
                        *ret_msg = PARAM_ERROR(
                            "state",
                            "value is not one of the allowed values [\"running\",\"paused\"]");
                        return -EINVAL;
                }
                p += l;
                if (!*p)
                        return 0;
                p++; /* a trailing comma is an empty, invalid value */
        }
}

static int parse_order(const char *s, enum list_order *ret, const char **ret_msg)
{
        if (strcmp(s, "desc") == 0)
                *ret = LIST_DESC;
        else if (strcmp(s, "asc") == 0)
                *ret = LIST_ASC;
        else {
                *ret_msg = PARAM_ERROR("order",
                                       "value is not one of the allowed values [\"asc\",\"desc\"]");
                return -EINVAL;
        }
        return 0;
}

/* E2B's parseFilters: the value unescaped as a whole, split at '&', each part exactly one
 * "k=v", key and value unescaped once more (the SDKs encode each pair before joining them). */
static int parse_metadata(const char *s, cJSON **ret, const char **ret_msg)
{
        _cleanup_free_ char *whole = NULL;
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o)
                return -ENOMEM;
        *ret_msg = "Error parsing metadata";
        if (url_percent_decode(s, strlen(s), &whole) < 0)
                return -EINVAL;
        for (char *p = whole;;) {
                size_t l = strcspn(p, "&");
                char *eq = memchr(p, '=', l);
                if (!eq || memchr(eq + 1, '=', l - (size_t)(eq + 1 - p)))
                        return -EINVAL;
                _cleanup_free_ char *k = NULL, *v = NULL;
                if (url_percent_decode(p, (size_t)(eq - p), &k) < 0 ||
                    url_percent_decode(eq + 1, l - (size_t)(eq + 1 - p), &v) < 0)
                        return -EINVAL;
                cJSON_DeleteItemFromObjectCaseSensitive(o, k); /* the last one wins, as in Go */
                if (!cJSON_AddStringToObject(o, k, v))
                        return -ENOMEM;
                p += l;
                if (!*p)
                        break;
                p++;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static int parse_template(const char *s, struct list_query *q, const char **ret_msg)
{
        if (strchr(s, ':')) {
                *ret_msg = "Invalid template: tags are not supported here because sandboxes are "
                           "not tag-scoped";
                return -EINVAL;
        }
        if (!template_name_valid(s)) {
                *ret_msg = "Invalid template: not a template id or alias";
                return -EINVAL;
        }
        snprintf(q->template_name, sizeof(q->template_name), "%s", s);
        return 0;
}

int list_query_parse(const struct list_params *p, struct list_query *ret, const char **ret_msg)
{
        struct list_query q = {.limit = LIST_DEFAULT_LIMIT,
                               .order = LIST_DESC,
                               .want_running = true,
                               .want_paused = true};
        enum list_order token_order = LIST_DESC;
        int r = 0;

        if (set(p->limit))
                r = parse_limit(p->limit, &q.limit, ret_msg);
        if (r >= 0 && set(p->state))
                r = parse_state(p->state, &q, ret_msg);
        if (r >= 0 && set(p->order))
                r = parse_order(p->order, &q.order, ret_msg);
        if (r >= 0 && set(p->started_after)) {
                r = validate_rfc3339_us(p->started_after, &q.started_after_us);
                if (r < 0)
                        *ret_msg = PARAM_ERROR("startedAfter",
                                               "string doesn't match the format \"date-time\"");
                q.started_after_set = r >= 0;
        }
        if (r >= 0 && set(p->next_token)) {
                r = list_cursor_decode(p->next_token, &q.cursor, &token_order);
                /* a token replayed under the other order would re-serve what was seen */
                if (r >= 0 && token_order != q.order)
                        r = -EINVAL;
                if (r < 0)
                        *ret_msg = "Invalid next token";
                q.after = r >= 0;
        }
        if (r >= 0 && set(p->metadata))
                r = parse_metadata(p->metadata, &q.metadata, ret_msg);
        if (r >= 0 && set(p->template_name))
                r = parse_template(p->template_name, &q, ret_msg);
        if (r < 0) {
                list_query_done(&q);
                return r;
        }
        *ret = q;
        return 0;
}

void list_query_done(struct list_query *q)
{
        cJSON_Delete(q->metadata);
        q->metadata = NULL;
}

int list_compare(enum list_order order, int64_t a_us, const char *a_id, int64_t b_us,
                 const char *b_id)
{
        /* desc: start DESC, id ASC; asc: the exact reverse */
        int c = a_us != b_us ? (a_us < b_us ? 1 : -1) : strcmp(a_id, b_id);
        return order == LIST_ASC ? -c : c;
}

bool list_past_cursor(const struct list_query *q, int64_t started_us, const char *id)
{
        return !q->after ||
               list_compare(q->order, started_us, id, q->cursor.started_us, q->cursor.id) > 0;
}

/* Go's RFC3339Nano of a microsecond time: the fraction without trailing zeros, none at all on
 * a whole second. */
static int format_us(int64_t us, char buf[static 40])
{
        int64_t sec = us / 1000000, frac = us % 1000000;
        if (frac < 0) {
                sec--;
                frac += 1000000;
        }
        struct tm tm;
        time_t t = (time_t)sec;
        if (!gmtime_r(&t, &tm) || strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
                return -EOVERFLOW;
        if (frac) {
                char f[8];
                snprintf(f, sizeof(f), ".%06lld", (long long)frac);
                for (size_t n = strlen(f); f[n - 1] == '0'; n--)
                        f[n - 1] = 0;
                strcat(buf, f);
        }
        strcat(buf, "Z");
        return 0;
}

int list_cursor_encode(int64_t started_us, const char *id, enum list_order order,
                       char out[static LIST_CURSOR_MAX])
{
        char ts[40], plain[LIST_CURSOR_MAX];
        if (format_us(started_us, ts) < 0)
                return -EOVERFLOW;
        size_t n = (size_t)snprintf(plain, sizeof(plain), "%s__%s%s", ts, id,
                                    order == LIST_ASC ? CURSOR_ASC_SUFFIX : "");
        if (n >= sizeof(plain) ||
            BASE64_ENCODE_LENGTH(n) + BASE64_ENCODE_FINAL_LENGTH >= LIST_CURSOR_MAX)
                return -ENAMETOOLONG;
        struct base64_encode_ctx ctx;
        base64url_encode_init(&ctx);
        size_t o = base64_encode_update(&ctx, out, n, (const uint8_t *)plain);
        o += base64_encode_final(&ctx, out + o);
        out[o] = 0;
        return 0;
}

int list_cursor_decode(const char *token, struct list_cursor *ret, enum list_order *ret_order)
{
        size_t len = strlen(token);
        char padded[LIST_CURSOR_MAX + 4];
        uint8_t plain[LIST_CURSOR_MAX];
        size_t n = sizeof(plain) - 1;

        if (len == 0 || len >= LIST_CURSOR_MAX ||
            strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                          "abcdefghijklmnopqrstuvwxyz"
                          "0123456789-_=") != len)
                return -EINVAL;
        memcpy(padded, token, len);
        while (len % 4) /* Go's URLEncoding pads; accept a token that lost its padding */
                padded[len++] = '=';
        struct base64_decode_ctx ctx;
        base64url_decode_init(&ctx);
        if (BASE64_DECODE_LENGTH(len) > n || !base64_decode_update(&ctx, &n, plain, len, padded) ||
            !base64_decode_final(&ctx) || memchr(plain, 0, n))
                return -EINVAL;
        plain[n] = 0;

        char *text = (char *)plain, *sep = strstr(text, "__");
        if (!sep)
                return -EINVAL;
        *sep = 0;
        char *id = sep + 2, *rest = strstr(id, "__");
        enum list_order order = LIST_DESC;
        if (rest) {
                if (strcmp(rest, CURSOR_ASC_SUFFIX) != 0)
                        return -EINVAL;
                *rest = 0;
                order = LIST_ASC;
        }
        struct list_cursor c = {};
        if (validate_rfc3339_us(text, &c.started_us) < 0 || strlen(id) >= sizeof(c.id) ||
            !sandbox_id_valid(id))
                return -EINVAL;
        memcpy(c.id, id, strlen(id) + 1);
        *ret = c;
        *ret_order = order;
        return 0;
}

static cJSON *read_template_json(const char *state_dir, const char *name)
{
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/templates/%s/template.json", state_dir,
                             name) >= sizeof(path))
                return NULL;
        return json_file_read(path, TEMPLATE_JSON_MAX);
}

static const char *json_str(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int add_name(cJSON *names, const char *n)
{
        if (!template_name_valid(n) || list_template_matches(names, n))
                return 0;
        return cJSON_AddItemToArray(names, cJSON_CreateString(n)) ? 0 : -ENOMEM;
}

int list_template_names(const char *state_dir, const char *name, cJSON **ret)
{
        _cleanup_json_ cJSON *names = cJSON_CreateArray();
        _cleanup_json_ cJSON *t = read_template_json(state_dir, name);
        int r = 0;
        if (!names)
                return -ENOMEM;
        /* a snapshot's alias holds the snapshot's template.json: its id and every alias */
        const char *sid = json_str(t, "snapshotID");
        _cleanup_json_ cJSON *snap = sid ? read_template_json(state_dir, sid) : NULL;
        if (snap && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(snap, "snapshot"))) {
                const cJSON *n;
                r = add_name(names, sid);
                cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(snap, "names"))
                {
                        if (r >= 0 && cJSON_IsString(n))
                                r = add_name(names, n->valuestring);
                }
        }
        if (r >= 0 && t)
                r = add_name(names, name);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(names);
        return 0;
}

bool list_template_matches(const cJSON *names, const char *template_id)
{
        const cJSON *n;
        cJSON_ArrayForEach(n, names)
        {
                if (cJSON_IsString(n) && strcmp(n->valuestring, template_id) == 0)
                        return true;
        }
        return false;
}
