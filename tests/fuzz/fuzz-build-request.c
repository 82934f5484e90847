/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what the build proxy reads of a build step's connection
 * (egress/policy/build-request.c): bytes from a build sandbox. Input: what the step sends.
 * Properties:
 *   - the head's end is found the same way however much of it has arrived (0 before it, the
 *     same length after), and never past BUILD_REQUEST_HEAD_MAX;
 *   - a head that parses names a host of 1 to BUILD_REQUEST_HOST_MAX bytes without spaces, a
 *     short port, and for a plain request a path starting with '/';
 *   - what a plain request is sent on with starts with its method, path and version, ends with
 *     "Connection: close" and the blank line, carries no proxy or connection header of the
 *     client's, one Host (the mirror's own name), and no line break but CRLF (a bare LF in the
 *     target once smuggled a header);
 *   - a mirror's response head goes back with one Connection header, "Connection: close".
 */
#include <string.h>
#include <strings.h>

#include "egress/policy/build-request.h"
#include "fuzz.h"

static int lines_starting(const char *s, size_t n, const char *prefix)
{
        int count = 0;
        size_t pl = strlen(prefix);
        for (size_t i = 0; i < n; i++)
                if ((i == 0 || s[i - 1] == '\n') && n - i >= pl && !strncasecmp(s + i, prefix, pl))
                        count++;
        return count;
}

/* The same bytes as a mirror's response head: sent on with "Connection: close" alone. */
static void response(const char *buf, size_t size)
{
        static char out[BUILD_REQUEST_HEAD_MAX + 64];
        int h = build_request_head_len(buf, size);
        int n = h > 0 ? build_response_rewrite(buf, (size_t)h, out, sizeof(out)) : -1;
        if (n < 0)
                return;
        FUZZ_CHECK((size_t)n < sizeof(out) && !memcmp(out, buf, 7));
        FUZZ_CHECK(lines_starting(out, (size_t)n, "connection:") == 1);
        FUZZ_CHECK(lines_starting(out, (size_t)n, "keep-alive:") == 0);
        FUZZ_CHECK(!memcmp(out + n - 21, "Connection: close\r\n\r\n", 21));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *buf = (const char *)data;
        response(buf, size);
        int h = build_request_head_len(buf, size);
        FUZZ_CHECK(h <= BUILD_REQUEST_HEAD_MAX && (h <= 0 || (size_t)h <= size));
        struct fuzz_chunker c;
        fuzz_chunker_init(&c, data, size, 64);
        for (size_t k = 0; k < size;) { /* prefixes, as the bytes arrive */
                k += fuzz_chunker_next(&c, size - k);
                int hk = build_request_head_len(buf, k);
                if (h > 0)
                        FUZZ_CHECK(k >= (size_t)h ? hk == h : hk == 0);
                else
                        FUZZ_CHECK(hk == 0 || (hk == h && k >= BUILD_REQUEST_HEAD_MAX));
        }
        if (h <= 0)
                return 0;
        FUZZ_CHECK(!memcmp(buf + h - 4, "\r\n\r\n", 4));
        struct build_request rq;
        if (build_request_parse(buf, (size_t)h, &rq) < 0)
                return 0;
        size_t hl = strlen(rq.host);
        FUZZ_CHECK(hl > 0 && hl <= BUILD_REQUEST_HOST_MAX && !memchr(rq.host, ' ', hl));
        FUZZ_CHECK(strlen(rq.port) < sizeof(rq.port) && rq.head_len == (size_t)h);
        if (rq.kind != BUILD_REQUEST_PLAIN)
                return 0;
        FUZZ_CHECK(rq.path[0] == '/');
        static char out[BUILD_REQUEST_HEAD_MAX + 64];
        int n = build_request_rewrite(buf, &rq, out, sizeof(out));
        if (n < 0)
                return 0;
        size_t first = strlen(rq.method) + 1 + strlen(rq.path) + 1 + strlen(rq.version);
        FUZZ_CHECK((size_t)n < sizeof(out) && (size_t)n >= first + 2);
        FUZZ_CHECK(!strncmp(out, rq.method, strlen(rq.method)) && out[first] == '\r');
        FUZZ_CHECK(!memcmp(out + n - 21, "Connection: close\r\n\r\n", 21));
        FUZZ_CHECK(lines_starting(out, (size_t)n, "proxy-authorization:") == 0);
        FUZZ_CHECK(lines_starting(out, (size_t)n, "proxy-connection:") == 0);
        FUZZ_CHECK(lines_starting(out, (size_t)n, "keep-alive:") == 0);
        FUZZ_CHECK(lines_starting(out, (size_t)n, "connection:") == 1);
        FUZZ_CHECK(lines_starting(out, (size_t)n, "host:") == 1); /* the mirror's own name */
        char host_line[BUILD_REQUEST_HOST_MAX + 16];
        snprintf(host_line, sizeof(host_line), "\r\nHost: %s\r\n", rq.host);
        FUZZ_CHECK(strstr(out, host_line) != NULL);
        for (int i = 0; i < n; i++) { /* the mirror reads the lines the proxy read */
                if (out[i] == '\r')
                        FUZZ_CHECK(i + 1 < n && out[i + 1] == '\n');
                if (out[i] == '\n')
                        FUZZ_CHECK(i > 0 && out[i - 1] == '\r');
        }
        return 0;
}
