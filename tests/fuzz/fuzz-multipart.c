/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the multipart/form-data parser of envd's uploads
 * (guest-agent/envd/multipart.c), with the Content-Type parsing in front of it
 * (http_media_type(), http_header_param(), guest-agent/core/http.c) as
 * agent_files_handle_post() does it.
 *
 * Input: a Content-Type value, '\n', then the body. Properties checked:
 *   - the body parsed in one feed and parsed cut into random chunks gives the same events
 *     (part begins with their name and filename, part data, part ends) and the same results;
 *   - part_data is never called with 0 bytes, part_end only closes a begun part, and a
 *     finished body (finish() == 0) leaves no part open;
 *   - a callback's error is sticky: every later feed returns it.
 */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "core/http.h"
#include "envd/multipart.h"
#include "fuzz.h"

struct events {
        struct buf log;    /* "B<len>:<name><len>:<filename>" "D<len>:<bytes>" "E" */
        struct buf data;   /* data of the current run of part_data calls, merged */
        int open;          /* parts begun and not ended: 0 or 1 */
        size_t calls;      /* part_begin and part_end calls so far */
        size_t fail_at;    /* part_begin/part_end fails on this call (0: never) */
        size_t bytes;      /* part data so far */
        size_t fail_bytes; /* part_data fails once this many bytes arrived (0: never) */
};

static void flush_data(struct events *e)
{
        if (e->data.len == 0)
                return;
        FUZZ_CHECK(buf_printf(&e->log, "D%zu:", e->data.len) == 0);
        FUZZ_CHECK(buf_add(&e->log, e->data.p, e->data.len) == 0);
        e->data.len = 0;
}

static int fail_now(struct events *e)
{
        return ++e->calls == e->fail_at ? -ENOSPC : 0;
}

static int on_begin(void *u, const char *name, const char *filename)
{
        struct events *e = u;
        FUZZ_CHECK(e->open == 0);
        flush_data(e);
        FUZZ_CHECK(buf_printf(&e->log, "B%zu:%s%zu:%s", name ? strlen(name) : 0, name ? name : "",
                              filename ? strlen(filename) : 0, filename ? filename : "") == 0);
        e->open = 1;
        return fail_now(e);
}

/* Data fails by byte position, not by call, so that both runs fail at the same byte however
 * their chunks fell (a full disk during an upload). */
static int on_data(void *u, const uint8_t *p, size_t len)
{
        struct events *e = u;
        FUZZ_CHECK(len > 0);
        FUZZ_CHECK(e->open == 1);
        int r = 0;
        if (e->fail_bytes && e->bytes + len >= e->fail_bytes) {
                len = e->fail_bytes - e->bytes;
                r = -ENOSPC;
        }
        e->bytes += len;
        FUZZ_CHECK(buf_add(&e->data, p, len) == 0);
        return r;
}

static int on_end(void *u)
{
        struct events *e = u;
        FUZZ_CHECK(e->open == 1);
        flush_data(e);
        FUZZ_CHECK(buf_adds(&e->log, "E") == 0);
        e->open = 0;
        return fail_now(e);
}

static const struct multipart_callbacks callbacks = {
    .part_begin = on_begin,
    .part_data = on_data,
    .part_end = on_end,
};

/* Parse body with chunks of at most max bytes (0: one feed). Returns the first error of a feed
 * (or 0), and the result of finish() in *ret_finish. */
static int run(const char *boundary, const uint8_t *body, size_t len, size_t max, struct events *e,
               int *ret_finish)
{
        struct multipart_parser *p = NULL;
        int r = multipart_parser_new(boundary, &callbacks, e, &p);
        FUZZ_CHECK(r == 0);
        int first = 0;
        struct fuzz_chunker c;
        fuzz_chunker_init(&c, body, len, max);
        for (size_t off = 0; off < len;) {
                size_t n = max ? fuzz_chunker_next(&c, len - off) : len;
                r = multipart_parser_feed(p, body + off, n);
                FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -ENOSPC);
                if (first < 0)
                        FUZZ_CHECK(r == first); /* errors are sticky */
                else
                        first = r;
                off += n;
        }
        *ret_finish = multipart_parser_finish(p);
        if (first < 0)
                FUZZ_CHECK(*ret_finish == first);
        if (*ret_finish == 0)
                FUZZ_CHECK(e->open == 0);
        flush_data(e);
        multipart_parser_free(p);
        return first;
}

static void compare(const char *boundary, const uint8_t *body, size_t len, size_t fail_at,
                    size_t fail_bytes)
{
        struct events a = {.fail_at = fail_at, .fail_bytes = fail_bytes};
        struct events b = {.fail_at = fail_at, .fail_bytes = fail_bytes};
        int fa, fb;
        int ra = run(boundary, body, len, 0, &a, &fa);
        int rb = run(boundary, body, len, 1 + len % 7, &b, &fb);
        FUZZ_CHECK(ra == rb);
        FUZZ_CHECK(fa == fb);
        FUZZ_CHECK(a.log.len == b.log.len &&
                   memcmp(buf_str(&a.log), buf_str(&b.log), a.log.len) == 0);
        buf_done(&a.log);
        buf_done(&a.data);
        buf_done(&b.log);
        buf_done(&b.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const uint8_t *nl = memchr(data, '\n', size);
        if (!nl)
                return 0;
        size_t hl = (size_t)(nl - data);
        char *ct = strndup((const char *)data, hl);
        FUZZ_CHECK(ct);
        const uint8_t *body = nl + 1;
        size_t len = size - hl - 1;

        char *media = NULL, *boundary = NULL;
        if (http_media_type(ct, &media) == 0)
                free(media);
        int r = http_header_param(ct, "boundary", &boundary);
        FUZZ_CHECK(r <= 1);
        if (r == 1) {
                FUZZ_CHECK(boundary != NULL);
        } else {
                /* No boundary parameter: fuzz the parser with the whole line as boundary. */
                free(boundary);
                boundary = strdup(ct);
                FUZZ_CHECK(boundary);
        }
        struct multipart_parser *p = NULL;
        r = multipart_parser_new(boundary, &callbacks, NULL, &p);
        if (r == 0) {
                multipart_parser_free(p);
                compare(boundary, body, len, 0, 0);
                /* And with a callback failing part-way (the upload's disk being full). */
                compare(boundary, body, len, 1 + len % 5, 0);
                compare(boundary, body, len, 0, 1 + len / 2);
        } else {
                FUZZ_CHECK(r == -EINVAL);
        }
        free(boundary);
        free(ct);
        return 0;
}
