/* SPDX-License-Identifier: Apache-2.0 */
/* Signed /files URLs: the signature itself, and the verdicts in envd's order (header, then the
 * signature, then its expiry; a malformed expiration first of all), and the registry scan that
 * finds the sandbox of a header-less URL or says why none. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/files-signature.h"
#include "lifecycle/registry.h"
#include "macros.h"
#include "unit.h"
#include "url-util.h"

#define TOK  "tok"
#define NOW  1900000000
#define SIG1 "v1_iK/F6MaDqTsOQ1PEgIlqD8TKW8/CqeG19RB8s5clV4U" /* /home/user/a:read::tok */
#define SIG2 "v1_VhmzGppzme0FiXHskmmlMl+36H5kfJdDu2WsAitGHd8" /* ...:write:root:tok:2000000000 */

static void test_compute(void)
{
        char out[48];
        files_signature_compute("/home/user/a", "read", "", TOK, -1, out);
        CHECK_STREQ(out, SIG1);
        files_signature_compute("/home/user/a", "write", "root", TOK, 2000000000, out);
        CHECK_STREQ(out, SIG2);
}

static enum files_auth get(const char *target, const char *header)
{
        return files_auth_check("GET", target, header, TOK, NOW);
}

static void test_verdicts(void)
{
        CHECK(files_auth_applies("GET", "/files"));
        CHECK(files_auth_applies("POST", "/files"));
        CHECK(!files_auth_applies("PUT", "/files"));
        CHECK(!files_auth_applies("GET", "//files"));
        CHECK(!files_auth_applies("GET", "/files/"));

        /* '/' and '+' percent-encoded, as URLSearchParams sends them */
        const char *good =
            "/files?path=%2Fhome%2Fuser%2Fa&signature=v1_iK%2FF6MaDqTsOQ1PEgIlqD8TKW8"
            "%2FCqeG19RB8s5clV4U";
        CHECK_EQ_INT(get(good, NULL), FILES_AUTH_SIGNATURE);
        CHECK_EQ_INT(get(good, ""), FILES_AUTH_SIGNATURE);
        CHECK_EQ_INT(files_auth_check("POST", good, NULL, TOK, NOW), FILES_AUTH_INVALID);
        CHECK_EQ_INT(files_auth_check("GET", good, NULL, "other", NOW), FILES_AUTH_INVALID);
        CHECK_EQ_INT(files_auth_check("GET", good, NULL, "", NOW), FILES_AUTH_INVALID);
        /* the header alone decides when present */
        CHECK_EQ_INT(get(good, TOK), FILES_AUTH_HEADER);
        CHECK_EQ_INT(get(good, "wrong"), FILES_AUTH_HEADER_MISMATCH);
        CHECK_EQ_INT(get("/files?path=x", TOK), FILES_AUTH_HEADER);
        CHECK_EQ_INT(get("/files?path=x", NULL), FILES_AUTH_MISSING);
        CHECK_EQ_INT(get("/files", NULL), FILES_AUTH_MISSING);
        /* the signed user: a second `username` does not change what was signed */
        CHECK_EQ_INT(get("/files?path=%2Fhome%2Fuser%2Fa&username=root&signature=" SIG1, NULL),
                     FILES_AUTH_INVALID);
        char t[512];
        snprintf(t, sizeof(t),
                 "/files?path=/home/user/a&username=root&signature_expiration=2000000000"
                 "&signature=%s&username=user",
                 "v1_VhmzGppzme0FiXHskmmlMl%2B36H5kfJdDu2WsAitGHd8");
        CHECK_EQ_INT(files_auth_check("POST", t, NULL, TOK, NOW), FILES_AUTH_SIGNATURE);
        CHECK_EQ_INT(files_auth_check("POST", t, NULL, TOK, 2000000000), FILES_AUTH_SIGNATURE);
        CHECK_EQ_INT(files_auth_check("POST", t, NULL, TOK, 2000000001), FILES_AUTH_EXPIRED);
        /* a wrong signature is invalid, expired or not */
        CHECK_EQ_INT(get("/files?path=/home/user/a&signature_expiration=1&signature=v1_x", NULL),
                     FILES_AUTH_INVALID);
        /* envd binds the parameters first: a malformed expiration is 400 even with the header */
        CHECK_EQ_INT(get("/files?path=a&signature_expiration=soon&signature=v1_x", NULL),
                     FILES_AUTH_BAD_EXPIRATION);
        CHECK_EQ_INT(get("/files?path=a&signature_expiration=", TOK), FILES_AUTH_BAD_EXPIRATION);
        CHECK_EQ_INT(get("/files?path=%zz&signature=" SIG1, NULL), FILES_AUTH_INVALID);

        CHECK_STREQ(files_auth_message(FILES_AUTH_INVALID), "invalid signature");
        CHECK_STREQ(files_auth_message(FILES_AUTH_EXPIRED), "signature is already expired");
        CHECK_STREQ(files_auth_message(FILES_AUTH_MISSING), "missing signature query parameter");
        CHECK_STREQ(files_auth_message(FILES_AUTH_HEADER_MISMATCH),
                    "access token present in header but does not match");
        CHECK(files_auth_message(FILES_AUTH_SIGNATURE) == NULL);
        CHECK_EQ_INT(files_auth_errno(FILES_AUTH_BAD_EXPIRATION), -EINVAL);
        CHECK_EQ_INT(files_auth_errno(FILES_AUTH_EXPIRED), -EACCES);
}

static void test_scan(void)
{
        struct registry *r;
        CHECK_EQ_INT(registry_new(&r), 0);
        const char *ids[] = {"aaa", "bbb"}, *toks[] = {"other", TOK};
        for (size_t i = 0; i < 2; i++) {
                struct sandbox *s = sandbox_new();
                snprintf(s->id, sizeof(s->id), "%s", ids[i]);
                snprintf(s->token, sizeof(s->token), "%s", toks[i]);
                CHECK_EQ_INT(registry_add(r, s), 0);
                sandbox_unref(s);
        }
        char id[64] = "";
        CHECK_EQ_INT(files_signature_find(r, "GET", "/files",
                                          "/files?path=%2Fhome%2Fuser%2Fa&signature=" SIG1, id),
                     0);
        CHECK_STREQ(id, "bbb");
        CHECK_EQ_INT(files_signature_find(r, "POST", "/files",
                                          "/files?path=%2Fhome%2Fuser%2Fa&signature=" SIG1, id),
                     -ENOENT);
        CHECK_EQ_INT(files_signature_find(r, "GET", "/files", "/files?path=x", id), -ENOENT);

        /* signed with bbb's token for an expiry in the past */
        char sig[48];
        _cleanup_free_ char *q = NULL, *t = NULL;
        files_signature_compute("/a", "read", "", TOK, 1000, sig);
        CHECK_EQ_INT(url_query_append(&q, "path", "/a"), 0);
        CHECK_EQ_INT(url_query_append(&q, "signature_expiration", "1000"), 0);
        CHECK_EQ_INT(url_query_append(&q, "signature", sig), 0);
        CHECK(asprintf(&t, "/files?%s", q) > 0);
        CHECK_EQ_INT(files_signature_find(r, "GET", "/files", t, id), -ENOENT);
        CHECK_EQ_INT(files_signature_refusal(r, "GET", "/files", t), FILES_AUTH_EXPIRED);
        CHECK_EQ_INT(files_signature_refusal(r, "GET", "/files", "/files?path=/a&signature=v1_x"),
                     FILES_AUTH_INVALID);
        CHECK_EQ_INT(
            files_signature_refusal(r, "GET", "/files",
                                    "/files?path=/a&signature_expiration=x&signature=v1_x"),
            FILES_AUTH_BAD_EXPIRATION);
        CHECK_EQ_INT(files_signature_refusal(r, "GET", "/files", "/files?path=/a"),
                     FILES_AUTH_MISSING);
        CHECK_EQ_INT(files_signature_refusal(r, "PUT", "/files", "/files?signature=v1_x"),
                     FILES_AUTH_MISSING);
        registry_free(r);
}

int main(void)
{
        test_compute();
        test_verdicts();
        test_scan();
        return unit_finish("test-files-signature");
}
