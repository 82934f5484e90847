/* SPDX-License-Identifier: Apache-2.0 */
/* The streaming multipart parser, fed every way a body can be split. */
#include <errno.h>
#include <stdlib.h>

#include "envd/multipart.h"
#include "macros.h"
#include "unit.h"

struct rec {
        char log[4096]; /* "B(name,filename)" "data" "E" */
        size_t len;
        int fail_on_begin;
};

static void add(struct rec *r, const char *s, size_t n)
{
        if (r->len + n < sizeof(r->log)) {
                memcpy(r->log + r->len, s, n);
                r->len += n;
                r->log[r->len] = 0;
        }
}

static int on_begin(void *u, const char *name, const char *filename)
{
        struct rec *r = u;
        char buf[512];
        if (r->fail_on_begin)
                return -ENOSPC;
        int n =
            snprintf(buf, sizeof(buf), "B(%s,%s)", name ? name : "-", filename ? filename : "-");
        add(r, buf, (size_t)n);
        return 0;
}

static int on_data(void *u, const uint8_t *buf, size_t len)
{
        CHECK(len > 0);
        add(u, (const char *)buf, len);
        return 0;
}

static int on_end(void *u)
{
        add(u, "E", 1);
        return 0;
}

static const struct multipart_callbacks cbs = {on_begin, on_data, on_end};

/* Feed body in chunks of the given sizes (cycled); returns finish()'s result or a feed error. */
static int run(const char *boundary, const char *body, size_t len, const size_t *sizes,
               size_t n_sizes, struct rec *r)
{
        struct multipart_parser *p = NULL;
        size_t off = 0, k = 0;
        int e;

        memset(r, 0, sizeof(*r));
        e = multipart_parser_new(boundary, &cbs, r, &p);
        if (e < 0)
                return e;
        while (off < len) {
                size_t n = sizes[k++ % n_sizes];
                if (n > len - off)
                        n = len - off;
                e = multipart_parser_feed(p, (const uint8_t *)body + off, n);
                if (e < 0) {
                        multipart_parser_free(p);
                        return e;
                }
                off += n;
        }
        e = multipart_parser_finish(p);
        multipart_parser_free(p);
        return e;
}

static const char body1[] =
    "preamble to ignore\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a.txt\"\r\n"
    "Content-Type: application/octet-stream\r\n"
    "\r\n"
    "hello\r\n--XyZnot the end\r\n--Xy\rZ\r\n"
    "\r\n--XyZ\r\n"
    "content-disposition: form-data; name=\"file\"; filename=\"b \\\"q\\\".txt\"\r\n"
    "\r\n"
    "\r\n--XyZ \t\r\n"
    "Content-Disposition: form-data; name=other\r\n"
    "\r\n"
    "x\r\n--XyZ--\r\n"
    "epilogue --XyZ garbage";

static const char expect1[] = "B(file,/home/user/a.txt)hello\r\n--XyZnot the end\r\n--Xy\rZ\r\nE"
                              "B(file,b \"q\".txt)E"
                              "B(other,-)xE";

static void test_all_splits(void)
{
        size_t len = sizeof(body1) - 1;
        struct rec r;

        /* Whole, every fixed chunk size, and every single two-way split point. */
        for (size_t cs = 1; cs <= len; cs++) {
                CHECK_EQ_INT(run("XyZ", body1, len, &cs, 1, &r), 0);
                CHECK_STREQ(r.log, expect1);
        }
        for (size_t at = 0; at <= len; at++) {
                size_t sizes[2] = {at ? at : len, len};
                CHECK_EQ_INT(run("XyZ", body1, len, sizes, 2, &r), 0);
                CHECK_STREQ(r.log, expect1);
        }
        size_t odd[] = {1, 2, 3, 5, 8, 13};
        CHECK_EQ_INT(run("XyZ", body1, len, odd, ELEMENTSOF(odd), &r), 0);
        CHECK_STREQ(r.log, expect1);
}

static void test_malformed(void)
{
        struct rec r;
        size_t one = 1, big = 4096;
        static const char trunc[] =
            "--b\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nabc";
        static const char nofinal[] = "--b\r\n\r\nabc\r\n--b";
        static const char badafter[] = "--b\r\n\r\nabc\r\n--bX";
        static const char empty_body[] = "--b--\r\n";
        static const char no_delim[] = "just text";

        CHECK_EQ_INT(run("b", trunc, sizeof(trunc) - 1, &one, 1, &r), -EBADMSG);
        CHECK_STREQ(r.log, "B(file,-)abc");
        CHECK_EQ_INT(run("b", nofinal, sizeof(nofinal) - 1, &big, 1, &r), -EBADMSG);
        CHECK_EQ_INT(run("b", badafter, sizeof(badafter) - 1, &one, 1, &r), -EBADMSG);
        CHECK_EQ_INT(run("b", empty_body, sizeof(empty_body) - 1, &one, 1, &r), 0);
        CHECK_STREQ(r.log, "");
        CHECK_EQ_INT(run("b", no_delim, sizeof(no_delim) - 1, &big, 1, &r), -EBADMSG);
        CHECK_EQ_INT(run("", no_delim, 1, &one, 1, &r), -EINVAL);
        CHECK_EQ_INT(run("a\r\nb", no_delim, 1, &one, 1, &r), -EINVAL);

        /* A header line past the bound is refused, not buffered. */
        size_t n = MULTIPART_MAX_HEADER_LINE + 64;
        char *huge = malloc(n + 16);
        memcpy(huge, "--b\r\nX: ", 8);
        memset(huge + 8, 'a', n);
        CHECK_EQ_INT(run("b", huge, n + 8, &big, 1, &r), -EBADMSG);
        free(huge);
}

static void test_callback_error_sticks(void)
{
        struct rec r;
        struct multipart_parser *p = NULL;
        static const char b[] = "--b\r\n\r\nabc\r\n--b--";

        memset(&r, 0, sizeof(r));
        r.fail_on_begin = 1;
        CHECK_EQ_INT(multipart_parser_new("b", &cbs, &r, &p), 0);
        CHECK_EQ_INT(multipart_parser_feed(p, (const uint8_t *)b, sizeof(b) - 1), -ENOSPC);
        CHECK_EQ_INT(multipart_parser_feed(p, (const uint8_t *)"x", 1), -ENOSPC);
        CHECK_EQ_INT(multipart_parser_finish(p), -ENOSPC);
        multipart_parser_free(p);
}

/* Large binary part with CR/LF/dash-heavy content, split in 1-byte and odd chunks. */
static void test_binary(void)
{
        static const char head[] = "--bnd\r\nContent-Disposition: form-data; name=\"file\"; "
                                   "filename=\"x\"\r\n\r\n";
        static const char tail[] = "\r\n--bnd--\r\n";
        size_t plen = 3000, len = sizeof(head) - 1 + plen + sizeof(tail) - 1;
        char *body = malloc(len), *payload = body + sizeof(head) - 1;
        const char alphabet[] = "\r\n-bnd\r\r\n--bn";
        struct rec r;
        size_t sizes[] = {1, 4, 9, 100};

        memcpy(body, head, sizeof(head) - 1);
        srand(42);
        for (size_t i = 0; i < plen; i++)
                payload[i] = alphabet[rand() % (sizeof(alphabet) - 1)];
        memcpy(payload + plen, tail, sizeof(tail) - 1);
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                CHECK_EQ_INT(run("bnd", body, len, &sizes[i], 1, &r), 0);
                CHECK_EQ_INT(r.len, strlen("B(file,x)") + plen + 1);
                CHECK(memcmp(r.log + 9, payload, plen) == 0);
                CHECK(r.log[r.len - 1] == 'E');
        }
        free(body);
}

/* Random bodies from an adversarial alphabet, random part counts and random chunking: the
 * parsed parts must equal the generated ones. */
static void test_random(void)
{
        static const char alphabet[] = "\r\n-bB \tx";
        const char *boundary = "b-B";
        char *body = malloc(64 * 1024), expect[4096];
        size_t sizes[8];
        struct rec r;

        srand(1234);
        for (int iter = 0; iter < 2000; iter++) {
                size_t len = 0, elen = 0;
                int parts = rand() % 4;

                len += (size_t)sprintf(body, "%s", rand() % 2 ? "pre\r\n" : "");
                for (int i = 0; i < parts; i++) {
                        char content[200];
                        size_t cl = (size_t)(rand() % 60);
                        for (size_t k = 0; k < cl; k++)
                                content[k] = alphabet[rand() % (sizeof(alphabet) - 1)];
                        /* Content never holds the delimiter itself (a sender picks a
                         * boundary that does not occur): draw again when it does. */
                        content[cl] = 0;
                        if (strstr(content, "\r\n--b-B")) {
                                i--;
                                continue;
                        }
                        len += (size_t)sprintf(body + len,
                                               "--%s\r\nContent-Disposition: form-data; "
                                               "name=\"f%d\"\r\n\r\n",
                                               boundary, i);
                        memcpy(body + len, content, cl);
                        len += cl;
                        len += (size_t)sprintf(body + len, "\r\n");
                        elen += (size_t)sprintf(expect + elen, "B(f%d,-)", i);
                        memcpy(expect + elen, content, cl);
                        elen += cl;
                        expect[elen++] = 'E';
                }
                len += (size_t)sprintf(body + len, "--%s--\r\n", boundary);
                expect[elen] = 0;
                for (size_t k = 0; k < ELEMENTSOF(sizes); k++)
                        sizes[k] = 1 + (size_t)(rand() % 9);
                CHECK_EQ_INT(run(boundary, body, len, sizes, ELEMENTSOF(sizes), &r), 0);
                CHECK_EQ_INT(r.len, elen);
                CHECK(r.len == elen && memcmp(r.log, expect, elen) == 0);
        }
        free(body);
}

int main(void)
{
        test_random();
        test_all_splits();
        test_malformed();
        test_callback_error_sticks();
        test_binary();
        return unit_finish("test-agent-multipart");
}
