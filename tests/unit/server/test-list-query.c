/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox list's query (e2b/list-query.h): parameters in E2B's words, the (start, id)
 * order both ways, E2B's cursor tokens, RFC 3339 bounds, the template filter's names. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/validate.h"
#include "e2b/list-query.h"
#include "fd-util.h"
#include "json-util.h"
#include "unit.h"

static int parse(struct list_params p, struct list_query *q)
{
        const char *msg = NULL;
        int r = list_query_parse(&p, q, &msg);
        if (r < 0)
                CHECK(msg && *msg);
        return r;
}

static void test_rfc3339(void)
{
        int64_t us;
        CHECK_EQ_INT(validate_rfc3339_us("1970-01-01T00:00:00Z", &us), 0);
        CHECK_EQ_INT(us, 0);
        CHECK_EQ_INT(validate_rfc3339_us("2023-11-14T22:13:20Z", &us), 0);
        CHECK_EQ_INT(us, 1700000000000000);
        CHECK_EQ_INT(validate_rfc3339_us("2023-11-14T22:13:20.5Z", &us), 0);
        CHECK_EQ_INT(us, 1700000000500000);
        CHECK_EQ_INT(validate_rfc3339_us("2023-11-14T22:13:20.123456789Z", &us), 0);
        CHECK_EQ_INT(us, 1700000000123456); /* truncated to microseconds */
        CHECK_EQ_INT(validate_rfc3339_us("2023-11-15T00:13:20.25+02:00", &us), 0);
        CHECK_EQ_INT(us, 1700000000250000);
        CHECK_EQ_INT(validate_rfc3339_us("2023-11-14t21:13:20-01:00", &us), 0);
        CHECK_EQ_INT(us, 1700000000000000);
        CHECK_EQ_INT(validate_rfc3339_us("2000-02-29T00:00:00z", &us), 0);
        static const char *const bad[] = {
            "",
            "yesterday",
            "2023-11-14",
            "2023-11-14T22:13:20",
            "2023-11-14 22:13:20Z",
            "2023-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2023-11-14T24:00:00Z",
            "2023-11-14T22:60:00Z",
            "2023-11-14T22:13:60Z",
            "2023-11-14T22:13:20.Z",
            "2023-11-14T22:13:20.1234567890Z",
            "2023-11-14T22:13:20+0200",
            "2023-11-14T22:13:20+24:00",
            "2023-11-14T22:13:20Zjunk",
            "02023-11-14T22:13:20Z",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CHECK_EQ_INT(validate_rfc3339_us(bad[i], &us), -EINVAL);
}

static void test_params(void)
{
        struct list_query q;
        CHECK_EQ_INT(parse((struct list_params){}, &q), 0);
        CHECK_EQ_INT(q.limit, 100);
        CHECK_EQ_INT(q.order, LIST_DESC); /* newest first */
        CHECK(!q.after && !q.started_after_set && !q.template_name[0] && !q.metadata);
        CHECK(q.want_running && q.want_paused);

        CHECK_EQ_INT(parse((struct list_params){.limit = "5",
                                                .state = "paused",
                                                .order = "asc",
                                                .started_after = "2023-11-14T22:13:20.5Z",
                                                .template_name = "base",
                                                /* each pair encoded, then the whole once more */
                                                .metadata = "a=b&c=d%2520e&f%3Dg=h"},
                           &q),
                     -EINVAL); /* "f=g=h" is no pair */
        CHECK_EQ_INT(parse((struct list_params){.limit = "5",
                                                .state = "paused",
                                                .order = "asc",
                                                .started_after = "2023-11-14T22:13:20.5Z",
                                                .template_name = "base",
                                                .metadata = "a=b&c=d%2520e&f%253Dg=h"},
                           &q),
                     0);
        CHECK_EQ_INT(q.limit, 5);
        CHECK(!q.want_running && q.want_paused);
        CHECK_EQ_INT(q.order, LIST_ASC);
        CHECK(q.started_after_set);
        CHECK_EQ_INT(q.started_after_us, 1700000000500000);
        CHECK_STREQ(q.template_name, "base");
        CHECK_STREQ(cJSON_GetObjectItemCaseSensitive(q.metadata, "a")->valuestring, "b");
        CHECK_STREQ(cJSON_GetObjectItemCaseSensitive(q.metadata, "c")->valuestring, "d e");
        CHECK_STREQ(cJSON_GetObjectItemCaseSensitive(q.metadata, "f=g")->valuestring, "h");
        list_query_done(&q);
        CHECK_EQ_INT(parse((struct list_params){.state = "running,paused", .order = "desc"}, &q),
                     0);
        CHECK(q.want_running && q.want_paused);
        CHECK_EQ_INT(parse((struct list_params){.limit = "", .next_token = "", .order = ""}, &q),
                     0);

        static const struct list_params bad[] = {
            {.limit = "0"},
            {.limit = "101"},
            {.limit = "x"},
            {.limit = "5x"},
            {.state = "dead"},
            {.state = "running,"},
            {.order = "sideways"},
            {.order = "ASC"},
            {.started_after = "yesterday"},
            {.next_token = "garbage"},
            {.next_token = "10"},
            {.next_token = "1795975986.abc123"}, /* sbx's old cursor */
            {.metadata = "novalue"},
            {.metadata = "a=%zz"},
            {.template_name = "base:v1"},
            {.template_name = "../x"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CHECK_EQ_INT(parse(bad[i], &q), -EINVAL);
}

static void test_cursor(void)
{
        char tok[LIST_CURSOR_MAX];
        struct list_cursor c;
        enum list_order o;
        CHECK_EQ_INT(list_cursor_encode(1700000000123400, "abc123", LIST_DESC, tok), 0);
        /* base64url("2023-11-14T22:13:20.1234Z__abc123"), as Go's URLEncoding writes it */
        CHECK_STREQ(tok, "MjAyMy0xMS0xNFQyMjoxMzoyMC4xMjM0Wl9fYWJjMTIz");
        CHECK_EQ_INT(list_cursor_decode(tok, &c, &o), 0);
        CHECK_EQ_INT(c.started_us, 1700000000123400);
        CHECK_STREQ(c.id, "abc123");
        CHECK_EQ_INT(o, LIST_DESC);
        CHECK_EQ_INT(list_cursor_encode(1700000000000000, "abcd", LIST_ASC, tok), 0);
        CHECK_EQ_INT(list_cursor_decode(tok, &c, &o), 0); /* "2023-11-14T22:13:20Z__abcd__asc" */
        CHECK_EQ_INT(c.started_us, 1700000000000000);
        CHECK_STREQ(c.id, "abcd");
        CHECK_EQ_INT(o, LIST_ASC);
        CHECK(strchr(tok, '=') != NULL); /* padded ... */
        *strchr(tok, '=') = 0;
        CHECK_EQ_INT(list_cursor_decode(tok, &c, &o), 0); /* ... and accepted without it */

        /* a token minted for one order is refused under the other */
        struct list_query q;
        CHECK_EQ_INT(parse((struct list_params){.next_token = tok}, &q), -EINVAL);
        CHECK_EQ_INT(parse((struct list_params){.next_token = tok, .order = "asc"}, &q), 0);
        CHECK(q.after);

        static const char *const bad[] = {
            "",
            "!!!!",
            "MjAyMw",                                     /* "2023" */
            "MjAyMy0xMS0xNFQyMjoxMzoyMFpfX2FiY19fZGVzYw", /* "...__abc__desc" */
            "eWVzdGVyZGF5X19hYmM",                        /* "yesterday__abc" */
            "MjAyMy0xMS0xNFQyMjoxMzoyMFpfX0FCQw",         /* id "ABC" */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                CHECK_EQ_INT(list_cursor_decode(bad[i], &c, &o), -EINVAL);
}

static void test_order(void)
{
        /* desc: newer first, then id ASC; asc: the exact reverse */
        CHECK(list_compare(LIST_DESC, 2, "b", 1, "a") < 0);
        CHECK(list_compare(LIST_DESC, 1, "a", 1, "b") < 0);
        CHECK(list_compare(LIST_ASC, 1, "b", 2, "a") < 0);
        CHECK(list_compare(LIST_ASC, 1, "b", 1, "a") < 0);
        CHECK_EQ_INT(list_compare(LIST_ASC, 1, "a", 1, "a"), 0);
        struct list_query q = {.order = LIST_DESC, .after = true, .cursor = {5, "m"}};
        CHECK(list_past_cursor(&q, 4, "a"));
        CHECK(list_past_cursor(&q, 5, "n"));
        CHECK(!list_past_cursor(&q, 5, "m"));
        CHECK(!list_past_cursor(&q, 6, "z"));
        q.order = LIST_ASC;
        CHECK(list_past_cursor(&q, 6, "z"));
        CHECK(list_past_cursor(&q, 5, "l"));
        CHECK(!list_past_cursor(&q, 5, "n"));
        q.after = false;
        CHECK(list_past_cursor(&q, 0, "a"));
}

static void put(const char *dir, const char *name, const char *json)
{
        char p[512];
        snprintf(p, sizeof(p), "%s/templates/%s", dir, name);
        CHECK(mkdir(p, 0755) == 0);
        snprintf(p, sizeof(p), "%s/templates/%s/template.json", dir, name);
        FILE *f = fopen(p, "w");
        CHECK(f != NULL);
        if (f) {
                fputs(json, f);
                fclose(f);
        }
}

static void check_names(const char *dir, const char *name, const char *want)
{
        _cleanup_json_ cJSON *n = NULL;
        CHECK_EQ_INT(list_template_names(dir, name, &n), 0);
        _cleanup_free_ char *text = n ? cJSON_PrintUnformatted(n) : NULL;
        CHECK_STREQ(text, want);
}

static void test_templates(void)
{
        char dir[] = "/tmp/sbx-unit-list.XXXXXX", p[512];
        CHECK(mkdtemp(dir) != NULL);
        snprintf(p, sizeof(p), "%s/templates", dir);
        CHECK(mkdir(p, 0755) == 0);
        put(dir, "base", "{\"name\":\"base\",\"layers\":[\"layer\"]}");
        const char *snap = "{\"name\":\"snap-1\",\"snapshot\":true,\"snapshotID\":\"snap-1\","
                           "\"names\":[\"mine\"]}";
        put(dir, "snap-1", snap);
        put(dir, "mine", snap);
        check_names(dir, "base", "[\"base\"]");
        check_names(dir, "snap-1", "[\"snap-1\",\"mine\"]");
        check_names(dir, "mine", "[\"snap-1\",\"mine\"]");
        check_names(dir, "nosuch", "[]");
        _cleanup_json_ cJSON *n = NULL;
        CHECK_EQ_INT(list_template_names(dir, "mine", &n), 0);
        CHECK(list_template_matches(n, "snap-1"));
        CHECK(list_template_matches(n, "mine"));
        CHECK(!list_template_matches(n, "base"));
        rm_rf(dir);
}

int main(void)
{
        test_rfc3339();
        test_params();
        test_cursor();
        test_order();
        test_templates();
        return unit_finish("test-list-query");
}
