/* SPDX-License-Identifier: Apache-2.0 */
#include "url-util.h"
#include "port/http1.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "macros.h"

/* Request headers the agent never passes on: its own connection to the server is not the
 * client's (RFC 9110 §7.6.1). Transfer-Encoding and Upgrade are written by the agent itself. */
static bool req_hop_by_hop(const char *name)
{
        static const char *const hop[] = {
            "Connection", "Keep-Alive",        "Proxy-Connection", "TE",
            "Trailer",    "Transfer-Encoding", "Upgrade",          "Proxy-Authorization"};
        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (strcasecmp(name, hop[i]) == 0)
                        return true;
        return false;
}

static bool clean(const char *s)
{
        return strpbrk(s, "\r\n") == NULL;
}

int port_req_head_build(const struct sbx_req_head *h, bool upgrade, struct buf *out,
                        enum port_req_body *ret_body)
{
        const char *path = h->path[0] ? h->path : "/";
        const char *up = sbx_header_get(h->headers, h->n_headers, "Upgrade");
        enum port_req_body body = PORT_REQ_NONE;

        if (!h->method[0] || strpbrk(h->method, " \r\n") || strpbrk(path, " \r\n") ||
            !clean(h->query) || (upgrade && (!up || !clean(up))))
                return -EINVAL;
        /* Transfer-Encoding wins over Content-Length (RFC 9112 §6.3) */
        if (sbx_header_get(h->headers, h->n_headers, "Transfer-Encoding"))
                body = PORT_REQ_CHUNKED;
        else if (sbx_header_get(h->headers, h->n_headers, "Content-Length"))
                body = PORT_REQ_LENGTH;
        if (buf_printf(out, "%s %s%s%s HTTP/1.1\r\n", h->method, path, h->query[0] ? "?" : "",
                       h->query) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < h->n_headers; i++) {
                const char *n = h->headers[i].name, *v = h->headers[i].value;
                if (!n[0] || strpbrk(n, " :\r\n") || !clean(v))
                        return -EINVAL;
                if (req_hop_by_hop(n) ||
                    (body == PORT_REQ_CHUNKED && strcasecmp(n, "Content-Length") == 0))
                        continue;
                if (buf_printf(out, "%s: %s\r\n", n, v) < 0)
                        return -ENOMEM;
        }
        int r;
        if (upgrade)
                r = buf_printf(out, "Connection: Upgrade\r\nUpgrade: %s\r\n\r\n", up);
        else
                r = buf_printf(out, "%sConnection: close\r\n\r\n",
                               body == PORT_REQ_CHUNKED ? "Transfer-Encoding: chunked\r\n" : "");
        if (r < 0)
                return -ENOMEM;
        *ret_body = upgrade ? PORT_REQ_NONE : body;
        return 0;
}

size_t port_resp_head_end(const char *buf, size_t len)
{
        const char *e = memmem(buf, len, "\r\n\r\n", 4);
        return e ? (size_t)(e - buf) + 4 : 0;
}

static bool token_char(char c)
{
        return c > ' ' && c < 127 && !strchr("\"(),/:;<=>?@[\\]{}", c);
}

static char *trim(char *s)
{
        while (*s == ' ' || *s == '\t')
                s++;
        size_t l = strlen(s);
        while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
                s[--l] = 0;
        return s;
}

/* "HTTP/1.x NNN[ reason]" */
static int parse_status_line(const char *line, int *ret)
{
        if (strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') ||
            line[8] != ' ')
                return -EPROTO;
        const char *d = line + 9;
        for (int i = 0; i < 3; i++)
                if (d[i] < '0' || d[i] > '9')
                        return -EPROTO;
        if (d[3] != 0 && d[3] != ' ')
                return -EPROTO;
        int s = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
        if (s < 100 || s > 599)
                return -EPROTO;
        *ret = s;
        return 0;
}

static int parse_length(const char *v, uint64_t *ret)
{
        uint64_t n = 0;
        if (!*v)
                return -EPROTO;
        for (const char *c = v; *c; c++) {
                if (*c < '0' || *c > '9' || n > (UINT64_MAX - 9) / 10)
                        return -EPROTO;
                n = n * 10 + (uint64_t)(*c - '0');
        }
        *ret = n;
        return 0;
}

/* Content-Length and Transfer-Encoding decide the body (RFC 9112 §6.3). */
static int body_mode(struct port_resp *r, bool head_request)
{
        const char *te = sbx_header_get(r->headers, r->n_headers, "Transfer-Encoding");
        bool has_len = false;
        r->body = PORT_RESP_CLOSE;
        for (size_t i = 0; i < r->n_headers; i++) {
                uint64_t l;
                if (strcasecmp(r->headers[i].name, "Content-Length") != 0)
                        continue;
                if (parse_length(r->headers[i].value, &l) < 0 || (has_len && l != r->length))
                        return -EPROTO;
                r->length = l;
                has_len = true;
        }
        if (head_request || r->status < 200 || r->status == 204 || r->status == 304)
                r->body = r->status == 101 ? PORT_RESP_CLOSE : PORT_RESP_NONE;
        else if (te) {
                /* chunked must be the last coding; anything else is read until close */
                const char *last = strrchr(te, ',');
                last = last ? last + 1 : te;
                while (*last == ' ' || *last == '\t')
                        last++;
                r->body = strcasecmp(last, "chunked") == 0 ? PORT_RESP_CHUNKED : PORT_RESP_CLOSE;
        } else if (has_len)
                r->body = PORT_RESP_LENGTH;
        return 0;
}

int port_resp_parse(char *buf, size_t len, bool head_request, struct port_resp *ret)
{
        struct port_resp r = {0};
        if (len < 4 || memcmp(buf + len - 4, "\r\n\r\n", 4) != 0 || memchr(buf, 0, len))
                return -EPROTO;
        buf[len - 2] = 0; /* the empty line ends the last header line */
        char *save = NULL;
        char *line = strtok_r(buf, "\n", &save);
        if (!line)
                return -EPROTO;
        size_t l = strlen(line);
        if (l == 0 || line[l - 1] != '\r')
                return -EPROTO;
        line[l - 1] = 0;
        if (strchr(line, '\r') || parse_status_line(line, &r.status) < 0)
                return -EPROTO;
        while ((line = strtok_r(NULL, "\n", &save))) {
                l = strlen(line);
                if (l == 0 || line[l - 1] != '\r')
                        return -EPROTO; /* a bare LF: refused rather than guessed at */
                line[l - 1] = 0;
                if (line[0] == 0)
                        break;
                if (strchr(line, '\r'))
                        return -EPROTO; /* a bare CR: no header value may carry one on */
                char *colon = strchr(line, ':');
                if (!colon || colon == line || r.n_headers >= PORT_MAX_RESP_HEADERS)
                        return -EPROTO;
                *colon = 0;
                for (const char *c = line; *c; c++)
                        if (!token_char(*c))
                                return -EPROTO; /* also obs-fold (a line starting with SP) */
                r.headers[r.n_headers++] = (struct sbx_header){line, trim(colon + 1)};
        }
        if (body_mode(&r, head_request) < 0)
                return -EPROTO;
        *ret = r;
        return 0;
}

bool port_resp_header_forwarded(const struct port_resp *r, const char *name)
{
        static const char *const hop[] = {"Connection", "Keep-Alive", "Proxy-Connection",
                                          "TE",         "Trailer",    "Transfer-Encoding"};
        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (strcasecmp(name, hop[i]) == 0)
                        return false;
        if (strcasecmp(name, "Upgrade") == 0)
                return r->status == 101;
        if (strcasecmp(name, "Content-Length") == 0)
                return r->body == PORT_RESP_LENGTH;
        return true;
}

enum {
        CH_SIZE = 0, /* hex digits */
        CH_EXT,      /* the rest of the size line */
        CH_DATA,
        CH_DATA_CR,
        CH_DATA_LF,
        CH_TRAILER_START,
        CH_TRAILER,
        CH_DONE,
};

/* A byte of the size line after its digits: extensions are skipped up to the LF. */
static int size_line_rest(struct port_chunked *c, uint8_t b)
{
        c->state = CH_EXT;
        if (b != '\n')
                return 0;
        c->line = 0;
        c->has_digit = false;
        c->state = c->left ? CH_DATA : CH_TRAILER_START;
        return 0;
}

/* One byte of a size or trailer line. */
static int line_byte(struct port_chunked *c, uint8_t b)
{
        if (++c->line > PORT_MAX_CHUNK_LINE)
                return -EPROTO;
        switch (c->state) {
        case CH_SIZE: {
                int v = hex_digit_value(b);
                if (v < 0)
                        return c->has_digit ? size_line_rest(c, b) : -EPROTO;
                if (c->left >> 60)
                        return -EPROTO; /* more than 2^64 */
                c->left = c->left << 4 | (uint64_t)v;
                c->has_digit = true;
                return 0;
        }
        case CH_EXT:
                return size_line_rest(c, b);
        case CH_TRAILER_START:
                if (b == '\r')
                        return 0;
                c->line = 0;
                c->state = b == '\n' ? CH_DONE : CH_TRAILER;
                return 0;
        case CH_TRAILER:
                if (b == '\n') {
                        c->line = 0;
                        c->state = CH_TRAILER_START;
                }
                return 0;
        }
        return -EPROTO;
}

int port_chunked_decode(struct port_chunked *c, uint8_t *buf, size_t len, size_t *ret_out)
{
        size_t in = 0, out = 0;
        while (in < len && c->state != CH_DONE) {
                if (c->state == CH_DATA) {
                        size_t k = (size_t)MIN((uint64_t)(len - in), c->left);
                        memmove(buf + out, buf + in, k);
                        out += k;
                        in += k;
                        c->left -= k;
                        if (c->left == 0)
                                c->state = CH_DATA_CR;
                        continue;
                }
                uint8_t b = buf[in++];
                if (c->state == CH_DATA_CR || c->state == CH_DATA_LF) {
                        if (b != (c->state == CH_DATA_CR ? '\r' : '\n'))
                                return -EPROTO;
                        c->state = c->state == CH_DATA_CR ? CH_DATA_LF : CH_SIZE;
                        continue;
                }
                if (line_byte(c, b) < 0)
                        return -EPROTO;
        }
        *ret_out = out;
        return c->state == CH_DONE ? 1 : 0;
}
