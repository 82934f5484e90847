/* SPDX-License-Identifier: Apache-2.0 */
#include "channel/agent-mhd.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "macros.h"

/* The body reader; owned by the MHD response once handed to it. */
struct stream {
        struct agent_req *q;
        const uint8_t *data;
        uint32_t len, off;
        uint64_t expected, sent; /* expected = MHD_SIZE_UNKNOWN when chunked */
};

static void stream_free(void *cls)
{
        struct stream *st = cls;
        agent_req_free(st->q);
        free(st);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
        struct stream *st = cls;
        for (;;) {
                if (st->off < st->len) {
                        size_t k = MIN(max, (size_t)(st->len - st->off));
                        memcpy(out, st->data + st->off, k);
                        st->off += (uint32_t)k;
                        return (ssize_t)k;
                }
                int r = agent_req_next(st->q, &st->data, &st->len);
                st->off = 0;
                if (r < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                if (r == 0) {
                        st->len = 0;
                        if (st->expected != MHD_SIZE_UNKNOWN && st->sent != st->expected)
                                return MHD_CONTENT_READER_END_WITH_ERROR;
                        return MHD_CONTENT_READER_END_OF_STREAM;
                }
                st->sent += st->len;
                if (st->expected != MHD_SIZE_UNKNOWN && st->sent > st->expected)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
        }
}

static int add_headers(struct MHD_Response *resp, const struct sbx_resp_head *h)
{
        for (size_t i = 0; i < h->n_headers; i++) {
                const char *n = h->headers[i].name, *v = h->headers[i].value;
                if (http_hop_by_hop(n) || strcasecmp(n, "Content-Length") == 0 ||
                    strcasecmp(n, "Date") == 0)
                        continue;
                if (MHD_add_response_header(resp, n, v) != MHD_YES)
                        return -EPROTO;
        }
        return 0;
}

int agent_mhd_respond(struct request *req, struct agent_req **q, const struct sbx_resp_head *h,
                      size_t buffer_max)
{
        _cleanup_agent_req_ struct agent_req *own = TAKE_PTR(*q);
        bool no_body = h->status == 204 || h->status == 304 || strcmp(req->method, "HEAD") == 0;
        struct MHD_Response *resp;
        uint64_t len;
        int r;

        if (no_body) {
                r = agent_req_drain(own);
                if (r < 0)
                        return r == -ECONNABORTED ? r : -EPROTO;
                resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        } else if (buffer_max > 0) {
                struct buf body = {};
                r = agent_req_read_body(own, buffer_max, &body);
                if (r < 0) {
                        buf_done(&body);
                        return r == -EMSGSIZE || r == -ECONNABORTED ? r : -EPROTO;
                }
                resp = MHD_create_response_from_buffer(body.len, body.p, MHD_RESPMEM_MUST_FREE);
                if (!resp)
                        buf_done(&body);
        } else {
                if (agent_resp_content_length(h, &len) < 0)
                        return -EPROTO;
                struct stream *st = calloc(1, sizeof(*st));
                if (!st)
                        return -ENOMEM;
                st->q = TAKE_PTR(own);
                st->expected = len;
                resp = MHD_create_response_from_callback(len, AGENT_STREAM_BLOCK, stream_read, st,
                                                         stream_free);
                if (!resp)
                        stream_free(st);
        }
        if (!resp)
                return -ENOMEM;
        if (add_headers(resp, h) < 0) {
                MHD_destroy_response(resp);
                return -EPROTO;
        }
        r = http_queue(req, h->status, resp);
        MHD_destroy_response(resp);
        return r;
}
