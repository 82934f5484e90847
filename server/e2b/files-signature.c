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

/* First occurrence of each parameter wins (Go's url.Values.Get; the agent reads `path` and
 * `username` the same way, so what was signed is what it acts on). */
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

/* A parsed signed query: the fields and the expiration, or the verdict it already earns. */
struct signed_request {
        struct signed_query q;
        const char *operation;
        long long exp; /* -1: none */
        bool parsed;   /* false: verdict holds the refusal */
        enum files_auth verdict;
};

static void signed_request_parse(const char *method, const char *target, struct signed_request *ret)
{
        _cleanup_free_ char *query = NULL;

        *ret = (struct signed_request){.exp = -1, .verdict = FILES_AUTH_INVALID};
        ret->operation = strcmp(method, "GET") == 0 ? "read" : "write";
        if (!target || query_from_target(target, &query) < 0 || parse_query(query, &ret->q) < 0)
                return; /* unreadable: nothing in it can be trusted as signed */
        if (ret->q.expiration && !parse_expiration(ret->q.expiration, &ret->exp)) {
                ret->verdict = FILES_AUTH_BAD_EXPIRATION;
                return;
        }
        ret->parsed = true;
}

/* The verdict of the signature alone (no header) for token. */
static enum files_auth signed_request_verify(const struct signed_request *sr, const char *token,
                                             time_t now)
{
        char expected[48];

        if (!sr->parsed)
                return sr->verdict;
        if (!sr->q.signature)
                return FILES_AUTH_MISSING;
        if (!token || !*token)
                return FILES_AUTH_INVALID;
        files_signature_compute(sr->q.path ? sr->q.path : "", sr->operation,
                                sr->q.username ? sr->q.username : "", token, sr->exp, expected);
        if (!const_time_streq(sr->q.signature, expected))
                return FILES_AUTH_INVALID;
        if (sr->exp >= 0 && sr->exp < (long long)now)
                return FILES_AUTH_EXPIRED;
        return FILES_AUTH_SIGNATURE;
}

bool files_auth_applies(const char *method, const char *path)
{
        return method && path && strcmp(path, "/files") == 0 &&
               (strcmp(method, "GET") == 0 || strcmp(method, "POST") == 0);
}

enum files_auth files_auth_check(const char *method, const char *target, const char *header_token,
                                 const char *token, time_t now)
{
        struct signed_request sr;
        enum files_auth a;

        signed_request_parse(method, target, &sr);
        if (sr.verdict == FILES_AUTH_BAD_EXPIRATION)
                a = sr.verdict; /* envd's parameter binding runs before its handler */
        else if (header_token && *header_token)
                a = const_time_streq(header_token, token) ? FILES_AUTH_HEADER
                                                          : FILES_AUTH_HEADER_MISMATCH;
        else
                a = signed_request_verify(&sr, token, now);
        signed_query_done(&sr.q);
        return a;
}

const char *files_auth_message(enum files_auth a)
{
        switch (a) {
        case FILES_AUTH_HEADER:
        case FILES_AUTH_SIGNATURE:
                return NULL;
        case FILES_AUTH_BAD_EXPIRATION:
                return "Invalid format for parameter signature_expiration: not an integer";
        case FILES_AUTH_HEADER_MISMATCH:
                return "access token present in header but does not match";
        case FILES_AUTH_MISSING:
                return "missing signature query parameter";
        case FILES_AUTH_EXPIRED:
                return "signature is already expired";
        case FILES_AUTH_INVALID:
                break;
        }
        return "invalid signature";
}

int files_auth_errno(enum files_auth a)
{
        return a == FILES_AUTH_BAD_EXPIRATION ? -EINVAL : -EACCES;
}

/* Whether target has a `signature` parameter (a signed URL, good or bad). */
static bool has_signature(const struct signed_request *sr)
{
        return sr->q.signature != NULL;
}

/* The best verdict over every registered sandbox's token: SIGNATURE (with its id) over EXPIRED
 * over the rest. -ENOMEM. */
static int scan(struct registry *reg, const struct signed_request *sr, enum files_auth *ret,
                char ret_id[static 64])
{
        struct sandbox **l = NULL;
        size_t n = 0;
        enum files_auth best = signed_request_verify(sr, NULL, 0);
        time_t now = time(NULL);

        if (registry_list(reg, &l, &n) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (best != FILES_AUTH_SIGNATURE) {
                        enum files_auth a = signed_request_verify(sr, l[i]->token, now);
                        if (a == FILES_AUTH_SIGNATURE)
                                snprintf(ret_id, 64, "%s", l[i]->id);
                        if (a == FILES_AUTH_SIGNATURE || a == FILES_AUTH_EXPIRED)
                                best = a;
                }
                sandbox_unref(l[i]);
        }
        free(l);
        *ret = best;
        return 0;
}

int files_signature_find(struct registry *reg, const char *method, const char *path,
                         const char *target, char ret_id[static 64])
{
        struct signed_request sr;
        enum files_auth a = FILES_AUTH_MISSING;
        char id[64];
        int r = 0;

        if (!files_auth_applies(method, path) || !target || !strstr(target, "signature="))
                return -ENOENT;
        signed_request_parse(method, target, &sr);
        if (sr.parsed && has_signature(&sr))
                r = scan(reg, &sr, &a, id);
        signed_query_done(&sr.q);
        if (r < 0)
                return r;
        if (a != FILES_AUTH_SIGNATURE)
                return -ENOENT;
        memcpy(ret_id, id, sizeof(id));
        return 0;
}

enum files_auth files_signature_refusal(struct registry *reg, const char *method, const char *path,
                                        const char *target)
{
        struct signed_request sr;
        enum files_auth a;
        char id[64];

        if (!files_auth_applies(method, path))
                return FILES_AUTH_MISSING;
        signed_request_parse(method, target, &sr);
        if (!has_signature(&sr))
                a = FILES_AUTH_MISSING;
        else if (!sr.parsed)
                a = sr.verdict;
        else if (scan(reg, &sr, &a, id) < 0)
                a = FILES_AUTH_INVALID;
        signed_query_done(&sr.q);
        return a;
}
