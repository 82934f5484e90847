/* SPDX-License-Identifier: Apache-2.0 */
#include "proxy-parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "net-policy.h"
#include "macros.h"

static unsigned be16(const unsigned char *p)
{
        return (unsigned)p[0] << 8 | p[1];
}

/* A cursor over the handshake message: each take() is checked against its end. */
struct cur {
        const unsigned char *p, *end;
};

static bool skip(struct cur *c, size_t n)
{
        if ((size_t)(c->end - c->p) < n)
                return false;
        c->p += n;
        return true;
}

static bool skip_vec(struct cur *c, unsigned len_bytes)
{
        if ((size_t)(c->end - c->p) < len_bytes)
                return false;
        size_t n = len_bytes == 1 ? c->p[0] : be16(c->p);
        return skip(c, len_bytes) && skip(c, n);
}

int proxy_tls_sni(const unsigned char *buf, size_t len, char name[static 256])
{
        /* the record header: handshake (22), version 3.x, length; the ClientHello must fit in
         * the first record (so every client here sends it) */
        if (len < 5)
                return 0;
        if (buf[0] != 22 || buf[1] != 3)
                return -EINVAL;
        size_t rec = be16(buf + 3);
        if (rec < 4 || rec > PROXY_HEAD_MAX)
                return -EINVAL;
        if (len < 5 + rec)
                return 0;
        const unsigned char *h = buf + 5;
        size_t hl = (size_t)h[1] << 16 | (size_t)h[2] << 8 | h[3];
        if (h[0] != 1 || hl + 4 > rec)
                return -EINVAL;
        struct cur c = {h + 4, h + 4 + hl};
        if (!skip(&c, 2 + 32) || !skip_vec(&c, 1) || !skip_vec(&c, 2) || !skip_vec(&c, 1))
                return -EINVAL;
        if (c.end - c.p < 2)
                return -EINVAL;
        size_t el = be16(c.p);
        c.p += 2;
        if ((size_t)(c.end - c.p) < el)
                return -EINVAL;
        c.end = c.p + el;
        while (c.end - c.p >= 4) {
                unsigned type = be16(c.p), n = be16(c.p + 2);
                c.p += 4;
                if ((size_t)(c.end - c.p) < n)
                        return -EINVAL;
                if (type == 0) { /* server_name: list length, then (type 0, length, name) */
                        struct cur s = {c.p, c.p + n};
                        if (!skip(&s, 2) || s.end - s.p < 3 || s.p[0] != 0)
                                return -EINVAL;
                        size_t nl = be16(s.p + 1);
                        if (!skip(&s, 3) || (size_t)(s.end - s.p) < nl || nl == 0 || nl > 253)
                                return -EINVAL;
                        for (size_t i = 0; i < nl; i++) {
                                char ch = (char)tolower(s.p[i]);
                                if (!(isalnum((unsigned char)ch) || ch == '-' || ch == '.'))
                                        return -EINVAL;
                                name[i] = ch;
                        }
                        name[nl] = '\0';
                        if (name[nl - 1] == '.')
                                name[nl - 1] = '\0';
                        return 1;
                }
                c.p += n;
        }
        return -EINVAL;
}

int proxy_http_head_len(const char *buf, size_t len)
{
        /* the method: a token, then a space */
        size_t i = 0;
        while (i < len && i < 16 && isupper((unsigned char)buf[i]))
                i++;
        if (i < len && (i == 0 || i == 16 || buf[i] != ' '))
                return -EINVAL;
        for (size_t k = 3; k < len && k < PROXY_HEAD_MAX; k++)
                if (buf[k] == '\n' && buf[k - 1] == '\r' && buf[k - 2] == '\n' &&
                    buf[k - 3] == '\r')
                        return (int)(k + 1);
        return len >= PROXY_HEAD_MAX ? -EINVAL : 0;
}

/* The next header line of a head at *pos (after the request line), without its CRLF: NULL at
 * the blank line or the end. */
static const char *next_line(const char **pos, const char *end, size_t *llen)
{
        const char *line = *pos;
        const char *nl = line < end ? memchr(line, '\n', (size_t)(end - line)) : NULL;
        if (!nl || nl - line <= 1)
                return NULL;
        *llen = (size_t)(nl - line - 1);
        *pos = nl + 1;
        return line;
}

static const char *first_line_end(const char *head, size_t len)
{
        const char *nl = memchr(head, '\n', len);
        return nl ? nl + 1 : head + len;
}

static bool is_header(const char *line, size_t llen, const char *name)
{
        size_t n = strlen(name);
        return llen > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

int proxy_http_host(const char *head, size_t len, char name[static 256])
{
        const char *pos = first_line_end(head, len), *line;
        size_t llen;
        while ((line = next_line(&pos, head + len, &llen))) {
                if (!is_header(line, llen, "host"))
                        continue;
                const char *v = line + 5, *end = line + llen;
                while (v < end && (*v == ' ' || *v == '\t'))
                        v++;
                size_t n = 0;
                while (v + n < end && v[n] != ':' && v[n] != ' ' && v[n] != '\t')
                        n++;
                if (n == 0 || n > 253)
                        return -EINVAL;
                for (size_t i = 0; i < n; i++) {
                        char ch = (char)tolower((unsigned char)v[i]);
                        if (!(isalnum((unsigned char)ch) || ch == '-' || ch == '.'))
                                return -EINVAL;
                        name[i] = ch;
                }
                name[n] = '\0';
                if (name[n - 1] == '.')
                        name[n - 1] = '\0';
                return 0;
        }
        return -ENOENT;
}

/* One reading only: every line ends in CRLF (no bare CR or LF, no NUL), no line folded onto
 * the one before, one Host. A head an upstream could read otherwise than the proxy (a second
 * Host, a line break the proxy did not see) could send the transform's headers elsewhere. */
static bool unambiguous(const char *head, size_t len)
{
        int hosts = 0;
        for (size_t i = 0; i < len; i++) {
                char c = head[i];
                if (c == 0 || (c == '\r' && (i + 1 >= len || head[i + 1] != '\n')) ||
                    (c == '\n' && (i == 0 || head[i - 1] != '\r')))
                        return false;
                if (c != '\n' || i + 1 >= len)
                        continue;
                const char *next = head + i + 1;
                size_t left = len - i - 1;
                if (next[0] == ' ' || next[0] == '\t')
                        return false;
                if (is_header(next, left, "host"))
                        hosts++;
        }
        return hosts <= 1;
}

int proxy_http_check_target(const char *head, size_t len, const char *name)
{
        if (!unambiguous(head, len))
                return -EINVAL;
        const char *sp = memchr(head, ' ', len);
        if (!sp || (size_t)(sp - head) + 2 >= len ||
            (sp[1] != '/' && !(sp[1] == '*' && sp[2] == ' ')))
                return -EINVAL;
        char host[256];
        int r = proxy_http_host(head, len, host);
        if (r < 0)
                return -EINVAL;
        return strcmp(host, name) == 0 ? 0 : -EXDEV;
}

static bool hop_by_hop(const char *line, size_t llen)
{
        static const char *const hop[] = {
            "connection", "keep-alive", "proxy-connection", "proxy-authorization", "te",
            "upgrade",    NULL};
        for (size_t i = 0; hop[i]; i++)
                if (is_header(line, llen, hop[i]))
                        return true;
        return false;
}

static bool replaced(const char *line, size_t llen, const cJSON *headers)
{
        const cJSON *h;
        cJSON_ArrayForEach(h, headers)
        {
                if (is_header(line, llen, h->string))
                        return true;
        }
        return false;
}

static int put(char *out, size_t size, size_t *o, const char *s, size_t n)
{
        if (size - *o < n + 1)
                return -ENOBUFS;
        memcpy(out + *o, s, n);
        *o += n;
        out[*o] = '\0';
        return 0;
}

int proxy_http_rewrite(const char *head, size_t len, const cJSON *headers, char *out, size_t size)
{
        const char *nl = memchr(head, '\n', len);
        if (!nl)
                return -EINVAL;
        size_t o = 0;
        int r = put(out, size, &o, head, (size_t)(nl - head + 1));
        const char *pos = nl + 1, *line;
        size_t llen;
        while ((line = next_line(&pos, head + len, &llen))) {
                if (r >= 0 && !hop_by_hop(line, llen) && !replaced(line, llen, headers))
                        r = put(out, size, &o, line, llen + 2);
        }
        const cJSON *h;
        cJSON_ArrayForEach(h, headers)
        {
                if (r >= 0)
                        r = put(out, size, &o, h->string, strlen(h->string));
                if (r >= 0)
                        r = put(out, size, &o, ": ", 2);
                if (r >= 0)
                        r = put(out, size, &o, h->valuestring, strlen(h->valuestring));
                if (r >= 0)
                        r = put(out, size, &o, "\r\n", 2);
        }
        if (r >= 0)
                r = put(out, size, &o, "Connection: close\r\n\r\n", 21);
        return r < 0 ? r : (int)o;
}

int proxy_resolve_value(const char *value,
                        int (*get)(void *arg, const char *name, char *buf, size_t size), void *arg,
                        char *out, size_t size, const char **ret_missing)
{
        static __thread char missing[NET_TRANSFORM_VALUE_MAX + 1];
        size_t o = 0, pl = strlen(NET_SECRET_PLACEHOLDER);
        const char *p = value;
        while (*p) {
                const char *ph = strstr(p, NET_SECRET_PLACEHOLDER);
                const char *end = ph ? strchr(ph + pl, '}') : NULL;
                size_t lit = ph && end ? (size_t)(ph - p) : strlen(p);
                if (put(out, size, &o, p, lit) < 0)
                        return -ENOBUFS;
                if (!ph || !end)
                        break;
                snprintf(missing, sizeof(missing), "%.*s", (int)(end - ph - pl), ph + pl);
                int n = get(arg, missing, out + o, size - o);
                if (n == -ENOENT) {
                        *ret_missing = missing;
                        return -ENOENT;
                }
                if (n < 0)
                        return n;
                o += (size_t)n;
                p = end + 1;
        }
        if (o >= size)
                return -ENOBUFS;
        out[o] = '\0';
        return (int)o;
}
