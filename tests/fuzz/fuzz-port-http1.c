/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for what the agent reads from a server on a user port
 * (guest-agent/port/http1.c): the response head and a chunked body. Input: a response as a
 * server would send it. Properties checked:
 *   - port_resp_head_end() finds the first empty line, never past the input;
 *   - a parsed head has a status 100..599, at most PORT_MAX_RESP_HEADERS headers, names of
 *     token characters and values without CR or LF (nothing a RESP_HEAD cannot carry), and a
 *     body mode that agrees with its headers (LENGTH only with a Content-Length);
 *   - the bytes after the head, decoded as chunked in one feed and cut into chunks, give the
 *     same verdict and the same output, which is never longer than the input.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "port/http1.h"

static void check_head(const uint8_t *data, size_t size, size_t end)
{
        char *b = malloc(end + 1);
        FUZZ_CHECK(b != NULL);
        memcpy(b, data, end);
        b[end] = 0;
        struct port_resp r;
        if (port_resp_parse(b, end, size & 1, &r) == 0) {
                FUZZ_CHECK(r.status >= 100 && r.status <= 599);
                FUZZ_CHECK(r.n_headers <= PORT_MAX_RESP_HEADERS);
                for (size_t i = 0; i < r.n_headers; i++) {
                        FUZZ_CHECK(r.headers[i].name[0] != 0);
                        FUZZ_CHECK(!strpbrk(r.headers[i].name, " \t\r\n:"));
                        FUZZ_CHECK(!strpbrk(r.headers[i].value, "\r\n"));
                }
                if (r.body == PORT_RESP_LENGTH)
                        FUZZ_CHECK(sbx_header_get(r.headers, r.n_headers, "Content-Length"));
        }
        free(b);
}

/* Decode all of in (len bytes) cut by ch (NULL: one feed) into out; returns the verdict. */
static int decode(const uint8_t *in, size_t len, struct fuzz_chunker *ch, uint8_t *out,
                  size_t *ret_out)
{
        struct port_chunked c = {0};
        uint8_t *tmp = malloc(len + 1);
        size_t o = 0, pos = 0;
        int r = 0;
        FUZZ_CHECK(tmp != NULL);
        while (pos < len && r == 0) {
                size_t n = ch ? fuzz_chunker_next(ch, len - pos) : len;
                size_t k = 0;
                memcpy(tmp, in + pos, n);
                r = port_chunked_decode(&c, tmp, n, &k);
                FUZZ_CHECK(k <= n);
                memcpy(out + o, tmp, k);
                o += k;
                pos += n;
        }
        free(tmp);
        *ret_out = o;
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        size_t end = port_resp_head_end((const char *)data, size);
        FUZZ_CHECK(end <= size);
        if (end > 0) {
                FUZZ_CHECK(end >= 4 && memcmp(data + end - 4, "\r\n\r\n", 4) == 0);
                FUZZ_CHECK(port_resp_head_end((const char *)data, end - 1) == 0);
                check_head(data, size, end);
        }
        const uint8_t *body = data + end;
        size_t len = size - end;
        uint8_t *a = malloc(len + 1), *b = malloc(len + 1);
        FUZZ_CHECK(a && b);
        size_t na, nb;
        struct fuzz_chunker ch;
        fuzz_chunker_init(&ch, data, size, 7);
        int ra = decode(body, len, NULL, a, &na);
        int rb = decode(body, len, &ch, b, &nb);
        FUZZ_CHECK(ra == rb);
        FUZZ_CHECK(ra == 1 || ra == 0 || ra == -EPROTO);
        if (ra >= 0) {
                FUZZ_CHECK(na == nb && memcmp(a, b, na) == 0);
                FUZZ_CHECK(na <= len);
        }
        free(a);
        free(b);
        return 0;
}
