/* SPDX-License-Identifier: Apache-2.0 */
#include "frame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "buf.h"
#include "fd-util.h"
#include "macros.h"

void sbx_frame_header_encode(uint8_t out[SBX_FRAME_HEADER_SIZE], uint8_t type, uint32_t len)
{
        out[0] = (uint8_t)(len >> 24);
        out[1] = (uint8_t)(len >> 16);
        out[2] = (uint8_t)(len >> 8);
        out[3] = (uint8_t)len;
        out[4] = type;
}

int sbx_frame_header_parse(const uint8_t in[SBX_FRAME_HEADER_SIZE], uint8_t *ret_type,
                           uint32_t *ret_len)
{
        uint32_t len = (uint32_t)in[0] << 24 | (uint32_t)in[1] << 16 | (uint32_t)in[2] << 8 | in[3];
        uint8_t type = in[4];
        switch (type) {
        case SBX_FRAME_REQ_HEAD:
        case SBX_FRAME_RESP_HEAD:
                if (len > SBX_FRAME_MAX_HEAD)
                        return -EMSGSIZE;
                break;
        case SBX_FRAME_DATA:
                if (len > SBX_FRAME_MAX_PAYLOAD)
                        return -EMSGSIZE;
                break;
        case SBX_FRAME_END:
                if (len != 0)
                        return -EMSGSIZE;
                break;
        default:
                return -EPROTO;
        }
        *ret_type = type;
        *ret_len = len;
        return 0;
}

/* ---- head encoding ---- */

/* A head being encoded: its bytes, and the first error (later puts do nothing). */
struct wbuf {
        struct buf b;
        int err;
};

static void wb_put(struct wbuf *w, const void *d, size_t n)
{
        if (w->err)
                return;
        if (w->b.len + n > SBX_FRAME_MAX_HEAD)
                w->err = -EMSGSIZE;
        else if (buf_add(&w->b, d, n) < 0)
                w->err = -ENOMEM;
}

static void wb_u16(struct wbuf *w, uint16_t v)
{
        uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
        wb_put(w, b, 2);
}

static void wb_str(struct wbuf *w, const char *s)
{
        size_t n = s ? strlen(s) : 0;
        if (n > SBX_HEAD_MAX_STRING) {
                if (!w->err)
                        w->err = -EMSGSIZE;
                return;
        }
        wb_u16(w, (uint16_t)n);
        wb_put(w, s, n);
}

static void wb_headers(struct wbuf *w, const struct sbx_header *h, size_t n)
{
        if (n > SBX_HEAD_MAX_HEADERS) {
                if (!w->err)
                        w->err = -E2BIG;
                return;
        }
        wb_u16(w, (uint16_t)n);
        for (size_t i = 0; i < n; i++) {
                wb_str(w, h[i].name);
                wb_str(w, h[i].value);
        }
}

static int wb_finish(struct wbuf *w, uint8_t **ret_buf, size_t *ret_len)
{
        if (w->err) {
                buf_done(&w->b);
                return w->err;
        }
        *ret_len = w->b.len;
        *ret_buf = (uint8_t *)buf_steal(&w->b);
        return 0;
}

int sbx_req_head_encode(const struct sbx_req_head *h, uint8_t **ret_buf, size_t *ret_len)
{
        struct wbuf w = {0};
        wb_u16(&w, h->port);
        wb_str(&w, h->method);
        wb_str(&w, h->path);
        wb_str(&w, h->query);
        wb_headers(&w, h->headers, h->n_headers);
        return wb_finish(&w, ret_buf, ret_len);
}

int sbx_resp_head_encode(const struct sbx_resp_head *h, uint8_t **ret_buf, size_t *ret_len)
{
        struct wbuf w = {0};
        if (h->status < 100 || h->status > 599)
                return -EINVAL;
        wb_u16(&w, h->status);
        wb_headers(&w, h->headers, h->n_headers);
        return wb_finish(&w, ret_buf, ret_len);
}

/* ---- head decoding ---- */

struct rbuf {
        const uint8_t *p;
        size_t len, off;
};

static int rb_u16(struct rbuf *r, uint16_t *v)
{
        if (r->len - r->off < 2)
                return -EBADMSG;
        *v = (uint16_t)(r->p[r->off] << 8 | r->p[r->off + 1]);
        r->off += 2;
        return 0;
}

static int rb_str(struct rbuf *r, const char **ret)
{
        uint16_t n;
        int e = rb_u16(r, &n);
        if (e < 0)
                return e;
        if (n > SBX_HEAD_MAX_STRING || r->len - r->off < n)
                return -EBADMSG;
        if (memchr(r->p + r->off, 0, n))
                return -EBADMSG;
        char *s = malloc((size_t)n + 1);
        if (!s)
                return -ENOMEM;
        memcpy(s, r->p + r->off, n);
        s[n] = 0;
        r->off += n;
        *ret = s;
        return 0;
}

static void headers_free(struct sbx_header *h, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                free((char *)h[i].name);
                free((char *)h[i].value);
        }
        free(h);
}

static int rb_headers(struct rbuf *r, struct sbx_header **ret, size_t *ret_n)
{
        uint16_t n;
        int e = rb_u16(r, &n);
        if (e < 0)
                return e;
        if (n > SBX_HEAD_MAX_HEADERS)
                return -E2BIG;
        struct sbx_header *h = calloc(n ? n : 1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if ((e = rb_str(r, &h[i].name)) < 0 || (e = rb_str(r, &h[i].value)) < 0) {
                        headers_free(h, n);
                        return e;
                }
        }
        *ret = h;
        *ret_n = n;
        return 0;
}

void sbx_req_head_free(struct sbx_req_head *h)
{
        if (!h)
                return;
        free((char *)h->method);
        free((char *)h->path);
        free((char *)h->query);
        headers_free(h->headers, h->n_headers);
        memset(h, 0, sizeof(*h));
}

void sbx_resp_head_free(struct sbx_resp_head *h)
{
        if (!h)
                return;
        headers_free(h->headers, h->n_headers);
        memset(h, 0, sizeof(*h));
}

int sbx_req_head_decode(const uint8_t *buf, size_t len, struct sbx_req_head *ret)
{
        struct rbuf r = {buf, len, 0};
        struct sbx_req_head h = {0};
        int e;
        memset(ret, 0, sizeof(*ret));
        if (len > SBX_FRAME_MAX_HEAD)
                return -EMSGSIZE;
        if ((e = rb_u16(&r, &h.port)) < 0 || (e = rb_str(&r, &h.method)) < 0 ||
            (e = rb_str(&r, &h.path)) < 0 || (e = rb_str(&r, &h.query)) < 0 ||
            (e = rb_headers(&r, &h.headers, &h.n_headers)) < 0)
                goto fail;
        if (r.off != r.len || h.method[0] == 0 || h.path[0] != '/') {
                e = -EBADMSG;
                goto fail;
        }
        *ret = h;
        return 0;
fail:
        sbx_req_head_free(&h);
        return e;
}

int sbx_resp_head_decode(const uint8_t *buf, size_t len, struct sbx_resp_head *ret)
{
        struct rbuf r = {buf, len, 0};
        struct sbx_resp_head h = {0};
        int e;
        memset(ret, 0, sizeof(*ret));
        if (len > SBX_FRAME_MAX_HEAD)
                return -EMSGSIZE;
        if ((e = rb_u16(&r, &h.status)) < 0 || (e = rb_headers(&r, &h.headers, &h.n_headers)) < 0)
                goto fail;
        if (r.off != r.len || h.status < 100 || h.status > 599) {
                e = -EBADMSG;
                goto fail;
        }
        *ret = h;
        return 0;
fail:
        sbx_resp_head_free(&h);
        return e;
}

const char *sbx_header_get(const struct sbx_header *h, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcasecmp(h[i].name, name) == 0)
                        return h[i].value;
        return NULL;
}

/* ---- blocking I/O ---- */

int sbx_frame_write(int fd, uint8_t type, const void *payload, size_t len)
{
        uint8_t hdr[SBX_FRAME_HEADER_SIZE];
        if (len > SBX_FRAME_MAX_PAYLOAD)
                return -EMSGSIZE;
        sbx_frame_header_encode(hdr, type, (uint32_t)len);
        struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)payload, len}};
        struct msghdr msg = {.msg_iov = iov, .msg_iovlen = len ? 2 : 1};
        size_t total = sizeof(hdr) + len;
        ssize_t n;
        do
                n = sendmsg(fd, &msg, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t)n == total)
                return 0;
        /* Short write: finish the rest byte-exactly. */
        size_t done = (size_t)n;
        if (done < sizeof(hdr)) {
                int e = write_full(fd, hdr + done, sizeof(hdr) - done);
                if (e < 0)
                        return e;
                done = sizeof(hdr);
        }
        return write_full(fd, (const uint8_t *)payload + (done - sizeof(hdr)), total - done);
}

int sbx_frame_read(int fd, uint8_t *ret_type, uint8_t *buf, uint32_t *ret_len)
{
        uint8_t hdr[SBX_FRAME_HEADER_SIZE];
        uint8_t type;
        uint32_t len;
        int e = read_exact(fd, hdr, sizeof(hdr));
        if (e < 0)
                return e;
        e = sbx_frame_header_parse(hdr, &type, &len);
        if (e < 0)
                return e;
        if (len > 0) {
                e = read_exact(fd, buf, len);
                if (e < 0)
                        return e == -EPIPE ? -EPROTO : e;
        }
        *ret_type = type;
        *ret_len = len;
        return 0;
}

int sbx_frame_read_body(int fd, uint8_t *buf, uint32_t *ret_len)
{
        uint8_t type;
        int e = sbx_frame_read(fd, &type, buf, ret_len);
        if (e < 0)
                return e;
        if (type == SBX_FRAME_END)
                return 0;
        return type == SBX_FRAME_DATA ? 1 : -EPROTO;
}
