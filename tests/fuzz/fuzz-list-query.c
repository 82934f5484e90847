/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the query of GET /v2/sandboxes (server/e2b/list-query.c, with the
 * RFC 3339 reader of server/core/validate.c) and the verdict on a signed /files request
 * (server/e2b/files-signature.c): all of it read from untrusted query strings.
 *
 * Input: up to eight fields separated by '\n': limit, nextToken, metadata, state, order,
 * startedAfter, template, and a /files request target. An empty field (the byte 0x01 alone)
 * stands for an absent parameter. Properties checked:
 *   - a parse that fails says why; one that succeeds keeps limit in 1..100, a template name
 *     that is valid, a metadata filter that is an object of strings;
 *   - a cursor that decodes encodes to a token that decodes to the same cursor and order, and
 *     the order it names is the one the parse insists on;
 *   - an accepted startedAfter reads the same twice, and the fraction only ever adds;
 *   - the /files verdict is one of the enum's, never accepts a request without a signature or
 *     the header, and the header alone decides when sent.
 */
#include <errno.h>
#include <string.h>

#include "core/validate.h"
#include "e2b/files-signature.h"
#include "e2b/list-query.h"
#include "fuzz.h"

#define FIELDS 8

static void check_query(const struct list_params *p)
{
        struct list_query q;
        const char *msg = NULL;
        int r = list_query_parse(p, &q, &msg);
        if (r < 0) {
                FUZZ_CHECK(r == -EINVAL || r == -ENOMEM);
                FUZZ_CHECK(r == -ENOMEM || (msg && *msg));
                return;
        }
        FUZZ_CHECK(q.limit >= 1 && q.limit <= LIST_MAX_LIMIT);
        FUZZ_CHECK(!q.template_name[0] || template_name_valid(q.template_name));
        const cJSON *m;
        cJSON_ArrayForEach(m, q.metadata) FUZZ_CHECK(cJSON_IsString(m) && m->string);
        if (q.after) {
                char tok[LIST_CURSOR_MAX];
                struct list_cursor c;
                enum list_order o;
                FUZZ_CHECK(list_cursor_decode(p->next_token, &c, &o) == 0 && o == q.order);
                FUZZ_CHECK(c.started_us == q.cursor.started_us && !strcmp(c.id, q.cursor.id));
                if (list_cursor_encode(c.started_us, c.id, o, tok) == 0) {
                        struct list_cursor c2;
                        enum list_order o2;
                        FUZZ_CHECK(list_cursor_decode(tok, &c2, &o2) == 0);
                        FUZZ_CHECK(o2 == o && c2.started_us == c.started_us &&
                                   strcmp(c2.id, c.id) == 0);
                }
        }
        list_query_done(&q);
}

static void check_time(const char *s)
{
        int64_t a, b;
        if (validate_rfc3339_us(s, &a) < 0)
                return;
        FUZZ_CHECK(validate_rfc3339_us(s, &b) == 0 && a == b);
        const char *dot = strchr(s, '.');
        if (dot) {
                /* the same instant without its fraction is at most one second earlier */
                char whole[64];
                size_t n = (size_t)(dot - s), d = strspn(dot + 1, "0123456789");
                if (n + strlen(dot + 1 + d) < sizeof(whole)) {
                        memcpy(whole, s, n);
                        strcpy(whole + n, dot + 1 + d);
                        FUZZ_CHECK(validate_rfc3339_us(whole, &b) == 0);
                        FUZZ_CHECK(a >= b && a - b < 1000000);
                }
        }
}

static void check_files(const char *target)
{
        static const char *const methods[] = {"GET", "POST"};
        for (size_t i = 0; i < 2; i++) {
                enum files_auth a = files_auth_check(methods[i], target, NULL, "tok", 1900000000);
                FUZZ_CHECK(a >= FILES_AUTH_HEADER && a <= FILES_AUTH_EXPIRED);
                FUZZ_CHECK(a != FILES_AUTH_HEADER);
                if (a == FILES_AUTH_SIGNATURE)
                        FUZZ_CHECK(strstr(target, "signature=") != NULL);
                a = files_auth_check(methods[i], target, "tok", "tok", 1900000000);
                FUZZ_CHECK(a == FILES_AUTH_HEADER || a == FILES_AUTH_BAD_EXPIRATION);
                a = files_auth_check(methods[i], target, "nope", "tok", 1900000000);
                FUZZ_CHECK(a == FILES_AUTH_HEADER_MISMATCH || a == FILES_AUTH_BAD_EXPIRATION);
                FUZZ_CHECK(files_auth_message(a) != NULL);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *f[FIELDS];
        char *copy = fuzz_fields(data, size, f, FIELDS);
        struct list_params lp = {.limit = f[0],
                                 .next_token = f[1],
                                 .metadata = f[2],
                                 .state = f[3],
                                 .order = f[4],
                                 .started_after = f[5],
                                 .template_name = f[6]};
        check_query(&lp);
        if (f[5])
                check_time(f[5]);
        if (f[1]) {
                struct list_cursor c;
                enum list_order o;
                (void)list_cursor_decode(f[1], &c, &o);
        }
        check_files(f[7] ? f[7] : "/files");
        free(copy);
        return 0;
}
