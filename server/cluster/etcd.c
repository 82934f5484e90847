/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/etcd.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"

int etcd_new(const char *spec, struct etcd **ret)
{
        const char *p = spec;
        if (strncmp(p, "etcd://", 7) == 0)
                p += 7;
        else if (strncmp(p, "http://", 7) == 0)
                p += 7;
        else
                return -EINVAL;
        _cleanup_free_ struct etcd *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        while (*p) {
                size_t l = strcspn(p, ",");
                if (l == 0 || l > 200 || e->n == ETCD_MAX_ENDPOINTS ||
                    strspn(p,
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-:[]") <
                        l) {
                        for (unsigned i = 0; i < e->n; i++)
                                free(e->endpoint[i]);
                        return -EINVAL;
                }
                if (asprintf(&e->endpoint[e->n], "http://%.*s", (int)l, p) < 0)
                        return -ENOMEM;
                e->n++;
                p += l;
                if (*p == ',')
                        p++;
        }
        if (e->n == 0)
                return -EINVAL;
        *ret = TAKE_PTR(e);
        return 0;
}

void etcd_free(struct etcd *e)
{
        if (!e)
                return;
        for (unsigned i = 0; i < e->n; i++)
                free(e->endpoint[i]);
        free(e);
}

void etcd_kvs_free(struct etcd_kv *kvs, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free(kvs[i].key);
                free(kvs[i].value);
        }
        free(kvs);
}

static char *b64(const char *s)
{
        size_t n = strlen(s);
        char *out = malloc(BASE64_ENCODE_LENGTH(n) + BASE64_ENCODE_FINAL_LENGTH + 1);
        if (!out)
                return NULL;
        struct base64_encode_ctx ctx;
        base64_encode_init(&ctx);
        size_t o = base64_encode_update(&ctx, out, n, (const uint8_t *)s);
        o += base64_encode_final(&ctx, out + o);
        out[o] = 0;
        return out;
}

static char *unb64(const char *s)
{
        size_t len = strlen(s), n = BASE64_DECODE_LENGTH(len) + 1;
        uint8_t *out = malloc(n);
        if (!out)
                return NULL;
        struct base64_decode_ctx ctx;
        base64_decode_init(&ctx);
        size_t got = n;
        if (!base64_decode_update(&ctx, &got, out, len, s) || !base64_decode_final(&ctx)) {
                free(out);
                return NULL;
        }
        out[got] = 0;
        return (char *)out;
}

/* The first key after every key starting with prefix (etcd's range_end for a prefix). */
static char *prefix_end(const char *prefix)
{
        char *e = strdup(prefix);
        if (!e)
                return NULL;
        size_t l = strlen(e);
        while (l > 0 && (unsigned char)e[l - 1] == 0xff)
                e[--l] = 0;
        if (l > 0)
                e[l - 1]++;
        return e;
}

static int post_one(const char *url, const char *body, long timeout_ms, struct buf *out,
                    long *ret_status)
{
        CURL *h = curl_easy_init();
        if (!h)
                return -ENOMEM;
        struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        struct buf_capped answer = {.max = ETCD_MAX_ANSWER};
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, buf_capped_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &answer);
        CURLcode c = curl_easy_perform(h);
        *out = answer.b;
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, ret_status);
        curl_easy_cleanup(h);
        curl_slist_free_all(hd);
        return c == CURLE_OK ? 0 : -EHOSTUNREACH;
}

/* POST body to path on the first endpoint that answers; the answer parsed. -EHOSTUNREACH when
 * none does, -EIO for an error answer (its message logged at debug). */
static int call(struct etcd *e, const char *path, const cJSON *body, cJSON **ret)
{
        _cleanup_free_ char *text = cJSON_PrintUnformatted(body);
        if (!text)
                return -ENOMEM;
        unsigned start = __atomic_load_n(&e->current, __ATOMIC_RELAXED);
        for (unsigned k = 0; k < e->n; k++) {
                unsigned i = (start + k) % e->n;
                char url[300];
                snprintf(url, sizeof(url), "%s%s", e->endpoint[i], path);
                struct buf out = {};
                long status = 0;
                int r = post_one(url, text, ETCD_CALL_TIMEOUT_MS, &out, &status);
                if (r < 0 || status == 0 || status == 503) {
                        buf_done(&out);
                        continue; /* down, or a member without quorum: the next one */
                }
                __atomic_store_n(&e->current, i, __ATOMIC_RELAXED);
                cJSON *j = cJSON_ParseWithLength(out.p ? out.p : "", out.len);
                if (status != 200 || !j) {
                        log_debug("etcd %s %s: %ld %.*s", url, text, status, (int)MIN(out.len, 200),
                                  out.p ? out.p : "");
                        buf_done(&out);
                        cJSON_Delete(j);
                        return status == 404 ? -ENOENT : -EIO;
                }
                buf_done(&out);
                *ret = j;
                return 0;
        }
        return -EHOSTUNREACH;
}

static int64_t num(const cJSON *o, const char *name)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
        if (cJSON_IsString(v)) /* int64 fields come as strings in proto3 JSON */
                return strtoll(v->valuestring, NULL, 10);
        if (cJSON_IsNumber(v))
                return (int64_t)v->valuedouble;
        return 0;
}

int etcd_range_prefix(struct etcd *e, const char *prefix, struct etcd_kv **ret, size_t *ret_n,
                      int64_t *ret_rev)
{
        _cleanup_free_ char *k = b64(prefix);
        _cleanup_free_ char *end = prefix_end(prefix);
        _cleanup_free_ char *ke = end ? b64(end) : NULL;
        _cleanup_json_ cJSON *req = cJSON_CreateObject();
        if (!k || !ke || !req || !cJSON_AddStringToObject(req, "key", k) ||
            !cJSON_AddStringToObject(req, "range_end", ke))
                return -ENOMEM;
        _cleanup_json_ cJSON *ans = NULL;
        int r = call(e, "/v3/kv/range", req, &ans);
        if (r < 0)
                return r;
        const cJSON *kvs = cJSON_GetObjectItemCaseSensitive(ans, "kvs");
        size_t n = (size_t)cJSON_GetArraySize(kvs), got = 0;
        struct etcd_kv *out = calloc(n ? n : 1, sizeof(*out));
        if (!out)
                return -ENOMEM;
        const cJSON *kv;
        cJSON_ArrayForEach(kv, kvs)
        {
                const cJSON *kk = cJSON_GetObjectItemCaseSensitive(kv, "key");
                const cJSON *vv = cJSON_GetObjectItemCaseSensitive(kv, "value");
                if (!cJSON_IsString(kk))
                        continue;
                out[got].key = unb64(kk->valuestring);
                out[got].value = unb64(cJSON_IsString(vv) ? vv->valuestring : "");
                out[got].mod_revision = num(kv, "mod_revision");
                if (!out[got].key || !out[got].value) {
                        free(out[got].key);
                        free(out[got].value);
                        continue;
                }
                got++;
        }
        if (ret_rev)
                *ret_rev = num(cJSON_GetObjectItemCaseSensitive(ans, "header"), "revision");
        *ret = out;
        *ret_n = got;
        return 0;
}

int etcd_get(struct etcd *e, const char *key, char **ret)
{
        struct etcd_kv *kvs = NULL;
        size_t n = 0;
        int r = etcd_range_prefix(e, key, &kvs, &n, NULL);
        if (r < 0)
                return r;
        r = -ENOENT;
        for (size_t i = 0; i < n && r == -ENOENT; i++)
                if (strcmp(kvs[i].key, key) == 0) {
                        *ret = TAKE_PTR(kvs[i].value);
                        r = 0;
                }
        etcd_kvs_free(kvs, n);
        return r;
}

int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease)
{
        if (strlen(value) > ETCD_MAX_VALUE)
                return -EMSGSIZE;
        _cleanup_free_ char *k = b64(key);
        _cleanup_free_ char *v = b64(value);
        _cleanup_json_ cJSON *req = cJSON_CreateObject();
        if (!k || !v || !req || !cJSON_AddStringToObject(req, "key", k) ||
            !cJSON_AddStringToObject(req, "value", v))
                return -ENOMEM;
        if (lease) {
                char l[32];
                snprintf(l, sizeof(l), "%" PRId64, lease);
                if (!cJSON_AddStringToObject(req, "lease", l))
                        return -ENOMEM;
        }
        _cleanup_json_ cJSON *ans = NULL;
        return call(e, "/v3/kv/put", req, &ans);
}

int etcd_put_claim(struct etcd *e, const char *key, const char *value, int64_t lease, int64_t held,
                   bool *ret_put)
{
        if (strlen(value) > ETCD_MAX_VALUE)
                return -EMSGSIZE;
        char lease_s[24], held_s[24];
        snprintf(lease_s, sizeof(lease_s), "%" PRId64, lease);
        snprintf(held_s, sizeof(held_s), "%" PRId64, held);
        _cleanup_free_ char *k = b64(key);
        _cleanup_free_ char *v = b64(value);
        _cleanup_json_ cJSON *req = cJSON_CreateObject();
        cJSON *cmp = req ? cJSON_AddArrayToObject(req, "compare") : NULL;
        cJSON *ok = req ? cJSON_AddArrayToObject(req, "success") : NULL;
        cJSON *c = cJSON_CreateObject(), *op = cJSON_CreateObject();
        cJSON *put = op ? cJSON_AddObjectToObject(op, "request_put") : NULL;
        if (!k || !v || !cmp || !ok || !c || !put || !cJSON_AddStringToObject(c, "key", k) ||
            !cJSON_AddStringToObject(c, "target", held ? "LEASE" : "CREATE") ||
            !cJSON_AddStringToObject(c, "result", "EQUAL") ||
            !cJSON_AddStringToObject(c, held ? "lease" : "create_revision", held ? held_s : "0") ||
            !cJSON_AddStringToObject(put, "key", k) || !cJSON_AddStringToObject(put, "value", v) ||
            (lease && !cJSON_AddStringToObject(put, "lease", lease_s))) {
                cJSON_Delete(c);
                cJSON_Delete(op);
                return -ENOMEM;
        }
        cJSON_AddItemToArray(cmp, c);
        cJSON_AddItemToArray(ok, op);
        _cleanup_json_ cJSON *ans = NULL;
        int r = call(e, "/v3/kv/txn", req, &ans);
        if (r >= 0)
                *ret_put = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ans, "succeeded"));
        return r;
}

int etcd_put_absent(struct etcd *e, const char *key, const char *value)
{
        bool put;
        return etcd_put_claim(e, key, value, 0, 0, &put);
}

int etcd_delete(struct etcd *e, const char *key)
{
        _cleanup_free_ char *k = b64(key);
        _cleanup_json_ cJSON *req = cJSON_CreateObject();
        if (!k || !req || !cJSON_AddStringToObject(req, "key", k))
                return -ENOMEM;
        _cleanup_json_ cJSON *ans = NULL;
        return call(e, "/v3/kv/deleterange", req, &ans);
}

int etcd_lease_grant(struct etcd *e, unsigned ttl_s, int64_t *ret_id)
{
        _cleanup_json_ cJSON *req = cJSON_CreateObject();
        if (!req || !cJSON_AddNumberToObject(req, "TTL", ttl_s))
                return -ENOMEM;
        _cleanup_json_ cJSON *ans = NULL;
        int r = call(e, "/v3/lease/grant", req, &ans);
        if (r < 0)
                return r;
        *ret_id = num(ans, "ID");
        return *ret_id ? 0 : -EIO;
}

int etcd_lease_keepalive(struct etcd *e, int64_t id)
{
        char l[32];
        snprintf(l, sizeof(l), "%" PRId64, id);
        _cleanup_json_ cJSON *req = cJSON_CreateObject();
        if (!req || !cJSON_AddStringToObject(req, "ID", l))
                return -ENOMEM;
        _cleanup_json_ cJSON *ans = NULL;
        /* The gateway streams: one answer object per request, then the stream stays open
         * until the request's timeout; the call returns what came before that. */
        int r = call(e, "/v3/lease/keepalive", req, &ans);
        if (r < 0)
                return r;
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(ans, "result");
        int64_t ttl = num(res ? res : ans, "TTL");
        return ttl > 0 ? (int)ttl : -ENOENT;
}

struct watch_ctx {
        struct buf line;
        etcd_watch_fn fn;
        void *ctx;
        const bool *stop;
        int err;
};

static void watch_line(struct watch_ctx *w, const char *s, size_t n)
{
        _cleanup_json_ cJSON *j = cJSON_ParseWithLength(s, n);
        const cJSON *res = cJSON_GetObjectItemCaseSensitive(j, "result");
        if (!res) {
                w->err = -EIO;
                return;
        }
        if (num(res, "compact_revision") > 0 ||
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(res, "canceled"))) {
                w->err = -ESTALE;
                return;
        }
        const cJSON *ev;
        cJSON_ArrayForEach(ev, cJSON_GetObjectItemCaseSensitive(res, "events"))
        {
                const cJSON *kv = cJSON_GetObjectItemCaseSensitive(ev, "kv");
                const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
                const cJSON *kk = cJSON_GetObjectItemCaseSensitive(kv, "key");
                const cJSON *vv = cJSON_GetObjectItemCaseSensitive(kv, "value");
                if (!cJSON_IsString(kk))
                        continue;
                bool del = cJSON_IsString(type) && strcmp(type->valuestring, "DELETE") == 0;
                _cleanup_free_ char *key = unb64(kk->valuestring);
                _cleanup_free_ char *value =
                    del ? NULL : unb64(cJSON_IsString(vv) ? vv->valuestring : "");
                if (key && (del || value))
                        w->fn(w->ctx, key, value, num(kv, "mod_revision"));
        }
}

static size_t on_watch_data(char *data, size_t size, size_t nmemb, void *ud)
{
        struct watch_ctx *w = ud;
        size_t n = size * nmemb;
        if (buf_add(&w->line, data, n) < 0 || w->line.len > ETCD_MAX_ANSWER)
                return 0;
        char *nl;
        while ((nl = memchr(w->line.p, '\n', w->line.len))) {
                size_t l = (size_t)(nl - w->line.p);
                watch_line(w, w->line.p, l);
                buf_consume(&w->line, l + 1);
                if (w->err)
                        return 0;
        }
        return n;
}

static int on_watch_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
        struct watch_ctx *w = ud;
        return __atomic_load_n(w->stop, __ATOMIC_RELAXED) ? 1 : 0;
}

int etcd_watch_prefix(struct etcd *e, const char *prefix, int64_t start_rev, etcd_watch_fn fn,
                      void *ctx, const bool *stop)
{
        _cleanup_free_ char *k = b64(prefix);
        _cleanup_free_ char *end = prefix_end(prefix);
        _cleanup_free_ char *ke = end ? b64(end) : NULL;
        _cleanup_json_ cJSON *req = cJSON_CreateObject();
        cJSON *cr = cJSON_AddObjectToObject(req, "create_request");
        char rev[32];
        snprintf(rev, sizeof(rev), "%" PRId64, start_rev);
        if (!k || !ke || !cr || !cJSON_AddStringToObject(cr, "key", k) ||
            !cJSON_AddStringToObject(cr, "range_end", ke) ||
            !cJSON_AddStringToObject(cr, "start_revision", rev))
                return -ENOMEM;
        _cleanup_free_ char *text = cJSON_PrintUnformatted(req);
        if (!text)
                return -ENOMEM;
        unsigned i = __atomic_load_n(&e->current, __ATOMIC_RELAXED) % e->n;
        char url[300];
        snprintf(url, sizeof(url), "%s/v3/watch", e->endpoint[i]);
        struct watch_ctx w = {.fn = fn, .ctx = ctx, .stop = stop};
        CURL *h = curl_easy_init();
        if (!h)
                return -ENOMEM;
        struct curl_slist *hd = curl_slist_append(NULL, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, text);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)ETCD_CALL_TIMEOUT_MS);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_watch_data);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &w);
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_watch_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, &w);
        /* A watch is quiet when nothing changes: a dead member is noticed by the progress
         * watchdog's silence limit instead (etcd sends no keepalive on an idle watch). */
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 3600L);
        CURLcode c = curl_easy_perform(h);
        curl_easy_cleanup(h);
        curl_slist_free_all(hd);
        buf_done(&w.line);
        if (w.err)
                return w.err;
        /* a member that went away: the next call starts with another one */
        __atomic_store_n(&e->current, (i + 1) % e->n, __ATOMIC_RELAXED);
        return c == CURLE_ABORTED_BY_CALLBACK ? 0 : -EIO;
}
