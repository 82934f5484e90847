/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/gunzip.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <zlib.h>

struct agent_gunzip {
        z_stream zs;
        bool member_done; /* the last byte seen ended a gzip member */
        bool seen_input;
        uint8_t out[AGENT_GUNZIP_CHUNK];
};

int agent_gunzip_new(struct agent_gunzip **ret)
{
        struct agent_gunzip *g = calloc(1, sizeof(*g));

        if (!g)
                return -ENOMEM;
        /* 16 + MAX_WBITS: gzip wrapper only (no raw zlib streams). */
        if (inflateInit2(&g->zs, 16 + MAX_WBITS) != Z_OK) {
                free(g);
                return -ENOMEM;
        }
        *ret = g;
        return 0;
}

void agent_gunzip_free(struct agent_gunzip *g)
{
        if (!g)
                return;
        inflateEnd(&g->zs);
        free(g);
}

void agent_gunzip_freep(struct agent_gunzip **g)
{
        agent_gunzip_free(*g);
}

int agent_gunzip_feed(struct agent_gunzip *g, const uint8_t *buf, size_t len,
                      agent_gunzip_sink sink, void *userdata)
{
        bool out_full = false; /* inflate may hold more output even without more input */

        g->zs.next_in = (Bytef *)buf;
        g->zs.avail_in = 0;
        for (;;) {
                /* avail_in is a uInt: feed huge buffers in slices. */
                if (g->zs.avail_in == 0 && len > 0) {
                        size_t n = len > (1u << 30) ? (1u << 30) : len;
                        g->zs.avail_in = (uInt)n;
                        len -= n;
                }
                if (g->zs.avail_in == 0 && !out_full)
                        return 0;
                if (g->member_done) {
                        /* Another member follows (Go's gzip.Reader reads them all). */
                        if (inflateReset(&g->zs) != Z_OK)
                                return -EBADMSG;
                        g->member_done = false;
                }
                g->seen_input = true;
                g->zs.next_out = g->out;
                g->zs.avail_out = sizeof(g->out);
                int z = inflate(&g->zs, Z_NO_FLUSH);
                if (z != Z_OK && z != Z_STREAM_END && z != Z_BUF_ERROR)
                        return -EBADMSG;
                size_t produced = sizeof(g->out) - g->zs.avail_out;
                if (produced > 0) {
                        int r = sink(userdata, g->out, produced);
                        if (r < 0)
                                return r;
                }
                out_full = g->zs.avail_out == 0;
                if (z == Z_STREAM_END) {
                        g->member_done = true;
                        out_full = false; /* Z_STREAM_END means all output was delivered */
                } else if (z == Z_BUF_ERROR && produced == 0) {
                        out_full = false;
                        if (g->zs.avail_in == 0 && len == 0)
                                return 0;
                }
        }
}

int agent_gunzip_finish(struct agent_gunzip *g)
{
        return g->seen_input && g->member_done ? 0 : -EBADMSG;
}
