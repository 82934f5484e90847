/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code interpreter's pure helpers: JSON strings from untrusted bytes, UTF-8 boundaries,
 * bash quoting and the bash kernel's completion marker (split anywhere).
 */
#include <stdlib.h>
#include <string.h>

#include "interp/code-json.h"
#include "unit.h"

static char *json_of(const char *s, size_t n)
{
        struct buf b = {0};
        CHECK(json_add_string(&b, s, n) == 0);
        return b.p;
}

static void test_json_strings(void)
{
        static const struct {
                const char *in;
                size_t n;
                const char *json;
        } cases[] = {
            {"a\"b\\c\n\t\x01", 8, "\"a\\\"b\\\\c\\n\\t\\u0001\""},
            {"h\xc3\xa9 \xe2\x9c\x93", 7, "\"h\xc3\xa9 \xe2\x9c\x93\""},
            /* invalid bytes, an overlong form, a lone surrogate, a truncated sequence */
            {"\xff\xc0\xaf\xed\xa0\x80x\xe2\x9c", 9,
             "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffdx\\ufffd\\ufffd\""},
            {"", 0, "\"\""},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                unit_case = cases[i].json;
                char *j = json_of(cases[i].in, cases[i].n);
                CHECK_STREQ(j, cases[i].json);
                free(j);
        }
        unit_case = NULL;
}

static void test_utf8_prefix(void)
{
        /* bytes → the length of their longest prefix that ends on a character's boundary */
        static const struct {
                const char *in;
                size_t n, prefix;
        } cases[] = {
            {"abc", 3, 3},   {"a\xe2\x9c", 3, 1},     {"a\xe2\x9c\x93", 4, 4},
            {"a\xc3", 2, 1}, {"a\xf0\x9f\x98", 4, 1}, {"\xff", 1, 1},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                unit_case = cases[i].in;
                CHECK_EQ_INT(utf8_complete_prefix(cases[i].in, cases[i].n), cases[i].prefix);
        }
        unit_case = NULL;
}

static void test_bash_quote(void)
{
        struct buf b = {0};
        CHECK(bash_quote(&b, "it's $HOME\n\\ \xc3\xa9", 15) == 0);
        CHECK_STREQ(b.p, "$'it\\x27s $HOME\\x0a\\x5c \\xc3\\xa9'");
        buf_done(&b);
}

static void test_marker(void)
{
        const char *nonce = "00ff";
        const char *all = "err line\n\x1eSBX00ff:7:130\x1etail";
        size_t start, end, len = strlen(all);
        unsigned seq;
        int status;

        CHECK_EQ_INT(bash_marker_scan(all, len, nonce, &start, &end, &seq, &status), 1);
        CHECK_EQ_INT(start, 9);
        CHECK_EQ_INT(seq, 7);
        CHECK_EQ_INT(status, 130);
        CHECK_STREQ(all + end, "tail");
        /* Every split point: the part before the marker is released, the rest held. */
        for (size_t cut = 0; cut < 9 + 15; cut++) {
                int r = bash_marker_scan(all, cut, nonce, &start, &end, &seq, &status);
                CHECK_EQ_INT(r, 0);
                CHECK_EQ_INT(start, cut <= 9 ? cut : 9);
        }
        /* Another nonce, or a stray 0x1e, is data. */
        CHECK_EQ_INT(
            bash_marker_scan("\x1eSBXbeef:1:0\x1e", 14, nonce, &start, &end, &seq, &status), 0);
        CHECK_EQ_INT(start, 14);
        CHECK_EQ_INT(bash_marker_scan("a\x1e"
                                      "b",
                                      3, nonce, &start, &end, &seq, &status),
                     0);
        CHECK_EQ_INT(start, 3);
}

int main(void)
{
        test_json_strings();
        test_utf8_prefix();
        test_bash_quote();
        test_marker();
        return unit_finish("test-code-json");
}
