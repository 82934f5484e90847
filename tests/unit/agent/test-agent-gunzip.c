/* SPDX-License-Identifier: Apache-2.0 */
/* Streaming gzip request-body decoder. */
#include <errno.h>
#include <stdlib.h>
#include <zlib.h>

#include "envd/gunzip.h"
#include "unit.h"

struct out {
        uint8_t *buf;
        size_t len, cap, max_piece;
};

static int sink(void *u, const uint8_t *b, size_t n)
{
        struct out *o = u;
        if (n > o->max_piece)
                o->max_piece = n;
        if (o->len + n > o->cap) {
                o->cap = (o->len + n) * 2;
                o->buf = realloc(o->buf, o->cap);
        }
        memcpy(o->buf + o->len, b, n);
        o->len += n;
        return 0;
}

static size_t gzip(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
        z_stream zs = {0};
        CHECK_EQ_INT(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
        zs.next_in = (Bytef *)in;
        zs.avail_in = (uInt)n;
        zs.next_out = out;
        zs.avail_out = (uInt)cap;
        CHECK_EQ_INT(deflate(&zs, Z_FINISH), Z_STREAM_END);
        size_t len = cap - zs.avail_out;
        deflateEnd(&zs);
        return len;
}

static int decode(const uint8_t *in, size_t n, size_t chunk, struct out *o)
{
        struct agent_gunzip *g = NULL;
        int e;

        memset(o, 0, sizeof(*o));
        CHECK_EQ_INT(agent_gunzip_new(&g), 0);
        for (size_t off = 0; off < n; off += chunk) {
                e = agent_gunzip_feed(g, in + off, n - off < chunk ? n - off : chunk, sink, o);
                if (e < 0) {
                        agent_gunzip_free(g);
                        return e;
                }
        }
        e = agent_gunzip_finish(g);
        agent_gunzip_free(g);
        return e;
}

int main(void)
{
        size_t plain_len = 300000, cap = 2 * plain_len + 1024;
        uint8_t *plain = malloc(plain_len), *gz = malloc(2 * cap);
        struct out o;
        size_t gl, chunks[] = {1, 2, 7, 4096, 1 << 20};

        srand(7);
        for (size_t i = 0; i < plain_len; i++)
                plain[i] = (uint8_t)(i % 3 ? rand() : 'a');
        gl = gzip(plain, plain_len, gz, cap);
        for (size_t i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
                CHECK_EQ_INT(decode(gz, gl, chunks[i], &o), 0);
                CHECK_EQ_INT(o.len, plain_len);
                CHECK(o.len == plain_len && memcmp(o.buf, plain, plain_len) == 0);
                CHECK(o.max_piece <= AGENT_GUNZIP_CHUNK);
                free(o.buf);
        }

        /* Two concatenated members. */
        size_t gl2 = gzip((const uint8_t *)"second", 6, gz + gl, cap);
        CHECK_EQ_INT(decode(gz, gl + gl2, 1000, &o), 0);
        CHECK_EQ_INT(o.len, plain_len + 6);
        CHECK(o.len == plain_len + 6 && memcmp(o.buf + plain_len, "second", 6) == 0);
        free(o.buf);

        /* Truncated, corrupt, trailing garbage, empty. */
        CHECK_EQ_INT(decode(gz, gl - 10, 512, &o), -EBADMSG);
        free(o.buf);
        gz[gl / 2] ^= 0xff;
        CHECK_EQ_INT(decode(gz, gl, 512, &o), -EBADMSG);
        free(o.buf);
        CHECK_EQ_INT(decode((const uint8_t *)"not gzip at all", 15, 3, &o), -EBADMSG);
        free(o.buf);
        CHECK_EQ_INT(decode(gz, 0, 1, &o), -EBADMSG);
        free(o.buf);

        /* High ratio: 64 MiB of zeros come out in bounded pieces. */
        size_t big = 64u << 20;
        uint8_t *zeros = calloc(1, big);
        gl = gzip(zeros, big, gz, cap);
        CHECK(gl < 200000);
        CHECK_EQ_INT(decode(gz, gl, 8192, &o), 0);
        CHECK_EQ_INT(o.len, big);
        CHECK(o.max_piece <= AGENT_GUNZIP_CHUNK);
        free(o.buf);
        free(zeros);

        free(plain);
        free(gz);
        return unit_finish("test-agent-gunzip");
}
