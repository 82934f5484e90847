/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer harness for the streaming gunzip of envd's uploads (guest-agent/envd/gunzip.c,
 * `Content-Encoding: gzip`). Properties checked:
 *   - the input decoded in one feed and decoded cut into random chunks gives the same output
 *     and the same results (feed and finish);
 *   - no sink call is empty or larger than AGENT_GUNZIP_CHUNK;
 *   - a sink error stops decoding and is returned as is;
 *   - round trip: the input gzip-compressed by zlib (as one or two members) decodes to exactly
 *     the input, with finish() == 0.
 */
#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "buf.h"
#include "envd/gunzip.h"
#include "fuzz.h"

/* What a run keeps at most: a small input can inflate to gigabytes (the real sink is a file on a
 * size-limited disk); past this the sink says -EFBIG, which is also the sink-error case. */
#define OUT_MAX (1024u * 1024u)

struct out {
        struct buf b;
        size_t limit;
        int failed;
};

static int sink(void *u, const uint8_t *p, size_t len)
{
        struct out *o = u;
        FUZZ_CHECK(len > 0 && len <= AGENT_GUNZIP_CHUNK);
        FUZZ_CHECK(!o->failed); /* no call after the sink failed */
        if (o->b.len + len > o->limit) {
                size_t room = o->limit - o->b.len;
                FUZZ_CHECK(buf_add(&o->b, p, room) == 0);
                o->failed = 1;
                return -EFBIG;
        }
        FUZZ_CHECK(buf_add(&o->b, p, len) == 0);
        return 0;
}

/* Decode in chunks of at most max (0: one feed). Returns the first feed error or 0; *ret_fin is
 * finish()'s result (only meaningful when no feed failed). */
static int run(const uint8_t *in, size_t len, size_t max, size_t limit, struct out *o, int *ret_fin)
{
        struct agent_gunzip *g = NULL;
        FUZZ_CHECK(agent_gunzip_new(&g) == 0);
        struct fuzz_chunker c;
        fuzz_chunker_init(&c, in, len, max);
        o->limit = limit;
        int r = 0;
        for (size_t off = 0; off < len && r == 0;) {
                size_t n = max ? fuzz_chunker_next(&c, len - off) : len;
                r = agent_gunzip_feed(g, in + off, n, sink, o);
                FUZZ_CHECK(r == 0 || r == -EBADMSG || r == -EFBIG);
                off += n;
        }
        *ret_fin = agent_gunzip_finish(g);
        FUZZ_CHECK(*ret_fin == 0 || *ret_fin == -EBADMSG);
        agent_gunzip_free(g);
        return r;
}

static void differential(const uint8_t *in, size_t len, size_t limit)
{
        struct out a = {}, b = {};
        int fa, fb;
        int ra = run(in, len, 0, limit, &a, &fa);
        int rb = run(in, len, 1 + len % 61, limit, &b, &fb);
        /* Success does not depend on how the input was cut. */
        FUZZ_CHECK((ra == 0) == (rb == 0));
        if (ra == 0 || (ra == -EFBIG && rb == -EFBIG)) {
                if (ra == 0)
                        FUZZ_CHECK(fa == fb);
                FUZZ_CHECK(a.b.len == b.b.len &&
                           memcmp(buf_str(&a.b), buf_str(&b.b), a.b.len) == 0);
        } else {
                /* Corrupt data: what inflate produced in the failing call is not passed on, and
                 * that call covers more or fewer bytes depending on the cut; both outputs are
                 * prefixes of the same stream. */
                size_t n = a.b.len < b.b.len ? a.b.len : b.b.len;
                FUZZ_CHECK(memcmp(buf_str(&a.b), buf_str(&b.b), n) == 0);
        }
        buf_done(&a.b);
        buf_done(&b.b);
}

/* zlib's gzip of in, appended to *z. */
static void gzip_member(const uint8_t *in, size_t len, struct buf *z)
{
        z_stream zs = {};
        FUZZ_CHECK(deflateInit2(&zs, in[0] % 10, Z_DEFLATED, 16 + MAX_WBITS, 8,
                                Z_DEFAULT_STRATEGY) == Z_OK);
        size_t cap = deflateBound(&zs, (uLong)len);
        FUZZ_CHECK(buf_reserve(z, cap) == 0);
        zs.next_in = (Bytef *)in;
        zs.avail_in = (uInt)len;
        zs.next_out = (Bytef *)z->p + z->len;
        zs.avail_out = (uInt)cap;
        FUZZ_CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
        z->len += cap - zs.avail_out;
        deflateEnd(&zs);
}

static void round_trip(const uint8_t *in, size_t len)
{
        struct buf z = {};
        size_t half = len / 2;
        if (in[0] & 0x80) { /* two members: Go's gzip.Reader reads both */
                gzip_member(in, half, &z);
                gzip_member(in + half, len - half, &z);
        } else {
                gzip_member(in, len, &z);
        }
        struct out o = {};
        int fin;
        int r = run((const uint8_t *)z.p, z.len, 1 + len % 13, SIZE_MAX, &o, &fin);
        FUZZ_CHECK(r == 0 && fin == 0);
        FUZZ_CHECK(o.b.len == len && memcmp(buf_str(&o.b), in, len) == 0);
        buf_done(&o.b);
        buf_done(&z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        differential(data, size, OUT_MAX);
        /* A small limit: the sink's error stops decoding at the same byte either way. */
        differential(data, size, 1 + size % 4096);
        round_trip(data, size);
        return 0;
}
