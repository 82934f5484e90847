/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/files-signature.h"

#include <errno.h>
#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/keys.h"
#include "macros.h"
#include "core/query.h"
#include "lifecycle/registry.h"
#include "lifecycle/sandbox.h"

#define MAX_SIGNED_FIELD 16384u

static void hash_str(struct sha256_ctx *c, const char *s)
{
        sha256_update(c, strlen(s), (const uint8_t *)s);
}

void files_signature_compute(const char *path, const char *operation, const char *username,
                             const char *token, long long exp, char out[static 48])
{
        struct sha256_ctx c;
        uint8_t digest[SHA256_DIGEST_SIZE];
        char b64[BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE) + 1];
        char expbuf[32];
        size_t n;

        sha256_init(&c);
        hash_str(&c, path);
        hash_str(&c, ":");
        hash_str(&c, operation);
        hash_str(&c, ":");
        hash_str(&c, username);
        hash_str(&c, ":");
        hash_str(&c, token);
        if (exp >= 0) {
                snprintf(expbuf, sizeof(expbuf), ":%lld", exp);
                hash_str(&c, expbuf);
        }
        sha256_digest(&c, sizeof(digest), digest);
        base64_encode_raw(b64, sizeof(digest), digest);
        n = BASE64_ENCODE_RAW_LENGTH(SHA256_DIGEST_SIZE);
        while (n > 0 && b64[n - 1] == '=')
                n--; /* no padding */
        b64[n] = 0;
        snprintf(out, 48, "v1_%s", b64);
}

struct signed_query {
        char *path, *username, *signature, *expiration;
};

static void signed_query_done(struct signed_query *q)
{
        free(q->path);
        free(q->username);
        free(q->signature);
        free(q->expiration);
}

/* First occurrence of each parameter wins (Go's url.Values.Get). */
static int parse_query(const char *query, struct signed_query *q)
{
        size_t pos = 0;
        int r;

        for (;;) {
                _cleanup_free_ char *k = NULL, *v = NULL;
                char **slot = NULL;

                r = query_next_pair(query, &pos, &k, &v);
                if (r <= 0)
                        return r;
                if (strlen(v) > MAX_SIGNED_FIELD)
                        return -E2BIG;
                if (strcmp(k, "path") == 0)
                        slot = &q->path;
                else if (strcmp(k, "username") == 0)
                        slot = &q->username;
                else if (strcmp(k, "signature") == 0)
                        slot = &q->signature;
                else if (strcmp(k, "signature_expiration") == 0)
                        slot = &q->expiration;
                if (slot && !*slot)
                        *slot = TAKE_PTR(v);
        }
}

static bool parse_expiration(const char *s, long long *ret)
{
        char *end;
        long long v;

        if (!*s)
                return false;
        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || *end)
                return false;
        *ret = v;
        return true;
}

bool files_signature_ok(const char *method, const char *path, const char *query,
                        const char *header_token, const char *token, time_t now)
{
        struct signed_query q = {};
        const char *operation;
        char expected[48];
        long long exp = -1;
        bool ok = false;

        if (strcmp(path, "/files") != 0 || !token || !*token)
                return false;
        if (header_token && *header_token)
                return false; /* a header that did not match already failed: envd refuses */
        if (strcmp(method, "GET") == 0)
                operation = "read";
        else if (strcmp(method, "POST") == 0)
                operation = "write";
        else
                return false;
        if (!query || parse_query(query, &q) < 0 || !q.signature)
                goto out;
        if (q.expiration && !parse_expiration(q.expiration, &exp))
                goto out;
        files_signature_compute(q.path ? q.path : "", operation, q.username ? q.username : "",
                                token, q.expiration ? exp : -1, expected);
        ok = const_time_streq(q.signature, expected) && (!q.expiration || exp >= (long long)now);
out:
        signed_query_done(&q);
        return ok;
}

bool files_signature_ok_target(const char *method, const char *path, const char *target,
                               const char *header_token, const char *token, time_t now)
{
        _cleanup_free_ char *query = NULL;
        if (!target || query_from_target(target, &query) < 0)
                return false;
        return files_signature_ok(method, path, query, header_token, token, now);
}

int files_signature_find(struct registry *reg, const char *method, const char *path,
                         const char *target, char ret_id[static 64])
{
        struct sandbox **l = NULL;
        size_t n = 0;
        int r = -ENOENT;

        if (strcmp(path, "/files") != 0 || !target || !strstr(target, "signature="))
                return -ENOENT;
        if (registry_list(reg, &l, &n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (r == -ENOENT && files_signature_ok_target(method, path, target, NULL,
                                                              l[i]->token, time(NULL))) {
                        snprintf(ret_id, 64, "%s", l[i]->id);
                        r = 0;
                }
                sandbox_unref(l[i]);
        }
        free(l);
        return r;
}
