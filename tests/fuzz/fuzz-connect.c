/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for Connect envelopes (api/connect.c, docs/e2b-wire.md §3.3): every
 * Connect request body the agent reads goes through connect_envelope_parse() first, whole
 * (agent_request_read_envelope()) or as a stream of envelopes (the native API's loop). The
 * input is such a body. Properties checked:
 *   - a parsed envelope lies inside the buffer, its length is at most max, its flags are 0 or
 *     end-of-stream, and its header re-encodes (connect_envelope_header()) to the same bytes;
 *   - "need more bytes" (0) is never answered for a buffer holding a whole envelope, and a
 *     buffer too short for a header always needs more;
 *   - reading the body as a stream (bytes arriving in random chunks, parsed as they come, as
 *     native-loop.c does) yields the same envelopes and the same error as parsing it whole.
 */
#include <errno.h>
#include <string.h>

#include "buf.h"
#include "connect.h"
#include "fuzz.h"

/* Parse envelopes from the front of buf until one is incomplete or wrong. Appends
 * "<flags><len>:<bytes>" per envelope to log; returns the last parse result (0 or -errno)
 * and the bytes consumed in *ret_used. */
static long parse_all(const uint8_t *buf, size_t len, size_t max, struct buf *log, size_t *ret_used)
{
        size_t off = 0;
        long n;
        for (;;) {
                uint8_t flags = 0xff;
                const uint8_t *msg = NULL;
                uint32_t ml = 0;
                n = connect_envelope_parse(buf + off, len - off, max, &flags, &msg, &ml);
                if (n <= 0)
                        break;
                FUZZ_CHECK((size_t)n == CONNECT_ENVELOPE_HEADER_SIZE + ml);
                FUZZ_CHECK((size_t)n <= len - off);
                FUZZ_CHECK(msg == buf + off + CONNECT_ENVELOPE_HEADER_SIZE);
                FUZZ_CHECK(ml <= max);
                FUZZ_CHECK(flags == 0 || flags == CONNECT_FLAG_END_STREAM);
                uint8_t h[CONNECT_ENVELOPE_HEADER_SIZE];
                connect_envelope_header(h, flags, ml);
                FUZZ_CHECK(memcmp(h, buf + off, sizeof(h)) == 0);
                FUZZ_CHECK(buf_printf(log, "%u%u:", flags, ml) == 0);
                FUZZ_CHECK(buf_add(log, msg, ml) == 0);
                off += (size_t)n;
        }
        if (n == 0 && len - off >= CONNECT_ENVELOPE_HEADER_SIZE) {
                /* Needs more: the announced length really is past the end. */
                const uint8_t *h = buf + off;
                uint32_t want =
                    (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
                FUZZ_CHECK(len - off - CONNECT_ENVELOPE_HEADER_SIZE < want);
        }
        FUZZ_CHECK(n == 0 || n == -EPROTO || n == -EMSGSIZE);
        *ret_used = off;
        return n;
}

/* The same body arriving in chunks, parsed as it comes into a growing buffer. */
static long parse_stream(const uint8_t *data, size_t size, size_t max, struct buf *log)
{
        struct buf in = {};
        struct fuzz_chunker c;
        fuzz_chunker_init(&c, data, size, 1 + size % 23);
        long n = 0;
        for (size_t off = 0; off < size && n >= 0;) {
                size_t k = fuzz_chunker_next(&c, size - off);
                FUZZ_CHECK(buf_add(&in, data + off, k) == 0);
                off += k;
                size_t used;
                n = parse_all((const uint8_t *)in.p, in.len, max, log, &used);
                buf_consume(&in, used);
        }
        buf_done(&in);
        return n;
}

static void check(const uint8_t *data, size_t size, size_t max)
{
        struct buf whole = {}, stream = {};
        size_t used;
        long a = parse_all(data, size, max, &whole, &used);
        long b = parse_stream(data, size, max, &stream);
        FUZZ_CHECK(a == b);
        FUZZ_CHECK(whole.len == stream.len &&
                   memcmp(buf_str(&whole), buf_str(&stream), whole.len) == 0);
        buf_done(&whole);
        buf_done(&stream);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        check(data, size, CONNECT_MAX_MESSAGE);
        /* A small maximum too, so the -EMSGSIZE path is reached with small inputs. */
        check(data, size, size % 64);
        if (size < CONNECT_ENVELOPE_HEADER_SIZE) {
                uint8_t f;
                const uint8_t *m;
                uint32_t l;
                FUZZ_CHECK(connect_envelope_parse(data, size, CONNECT_MAX_MESSAGE, &f, &m, &l) ==
                           0);
        }
        /* Error codes from an agent's Connect error body map to a status without a crash. */
        char code[32];
        size_t n = size < sizeof(code) - 1 ? size : sizeof(code) - 1;
        memcpy(code, data, n);
        code[n] = 0;
        int st = connect_code_http_status(code);
        FUZZ_CHECK(st >= 400 && st <= 599);
        return 0;
}
