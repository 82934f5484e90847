/* SPDX-License-Identifier: Apache-2.0 */
#include "build-request.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "macros.h"

int build_request_head_len(const char *buf, size_t len)
{
        size_t n = MIN(len, (size_t)BUILD_REQUEST_HEAD_MAX);
        for (size_t i = 3; i < n; i++)
                if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' &&
                    buf[i - 3] == '\r')
                        return (int)i + 1;
        return len >= BUILD_REQUEST_HEAD_MAX ? -E2BIG : 0;
}

/* The next token of the request line, up to a space or its end, into out (size > its length). */
static bool token(const char **p, const char *end, char *out, size_t size)
{
        const char *s = *p;
        size_t n = 0;
        while (s + n < end && s[n] != ' ')
                n++;
        if (n == 0 || n >= size)
                return false;
        for (size_t i = 0; i < n; i++) /* no control bytes: a line break in a target smuggles */
                if ((unsigned char)s[i] < 0x21 || s[i] == 0x7f)
                        return false;
        memcpy(out, s, n);
        out[n] = 0;
        *p = s + n + (s + n < end);
        return true;
}

/* host[:port] of a target into rq: the port after colon (NULL: def_port). */
static bool authority(const char *a, size_t n, const char *colon, const char *def_port,
                      struct build_request *rq)
{
        size_t hl = colon ? (size_t)(colon - a) : n;
        const char *port = colon ? colon + 1 : def_port;
        size_t pl = colon ? n - hl - 1 : strlen(def_port);
        if (hl == 0 || hl > BUILD_REQUEST_HOST_MAX || pl >= sizeof(rq->port))
                return false;
        memcpy(rq->host, a, hl);
        rq->host[hl] = 0;
        memcpy(rq->port, port, pl);
        rq->port[pl] = 0;
        return true;
}

/* One reading only: every line ends in CRLF (no bare CR or LF, no NUL) and none is folded onto
 * the one before, so that the mirror reads the head as the proxy did. */
static bool unambiguous(const char *head, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                char c = head[i];
                if (c == 0 || (c == '\r' && (i + 1 >= len || head[i + 1] != '\n')) ||
                    (c == '\n' && (i == 0 || head[i - 1] != '\r')) ||
                    (c == '\n' && i + 1 < len && (head[i + 1] == ' ' || head[i + 1] == '\t')))
                        return false;
        }
        return true;
}

/* The value of header line line (len bytes, CRLF included) when it is name's, else NULL. */
static const char *header_value(const char *line, size_t len, const char *name, size_t *ret_len)
{
        size_t n = strlen(name);
        if (len < n + 3 || strncasecmp(line, name, n) != 0 || line[n] != ':')
                return NULL;
        const char *v = line + n + 1, *end = line + len - 2;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        *ret_len = (size_t)(end - v);
        return v;
}

/* The request's headers that matter: Host (one; its name, lowercase, without a port), its body
 * (one Content-Length of digits only; no Transfer-Encoding: -ENOTSUP, a chunked body is not
 * proxied); -EINVAL for a head that could be read two ways. */
static int body(const char *head, size_t head_len, struct build_request *rq)
{
        const char *end = head + head_len - 2, *line = memchr(head, '\n', head_len);
        int lengths = 0, hosts = 0;
        for (line = line ? line + 1 : end; line < end;) {
                const char *eol = memchr(line, '\n', (size_t)(end - line));
                size_t l = eol ? (size_t)(eol - line) + 1 : (size_t)(end - line), vl;
                const char *v;
                if (header_value(line, l, "transfer-encoding", &vl))
                        return -ENOTSUP;
                if ((v = header_value(line, l, "host", &vl))) {
                        const char *colon = v[0] == '[' ? NULL : memchr(v, ':', vl);
                        size_t hl = colon ? (size_t)(colon - v) : vl;
                        if (++hosts > 1 || hl == 0 || hl > BUILD_REQUEST_HOST_MAX)
                                return -EINVAL;
                        for (size_t i = 0; i < hl; i++)
                                rq->host_header[i] = (char)tolower((unsigned char)v[i]);
                        rq->host_header[hl] = 0;
                }
                if ((v = header_value(line, l, "content-length", &vl))) {
                        uint64_t n = 0;
                        if (++lengths > 1 || vl == 0 || vl > 15)
                                return -EINVAL;
                        for (size_t i = 0; i < vl; i++) {
                                if (v[i] < '0' || v[i] > '9')
                                        return -EINVAL;
                                n = n * 10 + (uint64_t)(v[i] - '0');
                        }
                        rq->body_len = n;
                }
                line += l;
        }
        return 0;
}

int build_request_parse(const char *head, size_t head_len, struct build_request *ret)
{
        if (!unambiguous(head, head_len))
                return -EINVAL;
        struct build_request rq = {.head_len = head_len};
        const char *eol = memchr(head, '\r', head_len), *p = head;
        char target[BUILD_REQUEST_PATH_MAX + 8];
        if (!eol || !token(&p, eol, rq.method, sizeof(rq.method)) ||
            !token(&p, eol, target, sizeof(target)) ||
            !token(&p, eol, rq.version, sizeof(rq.version)) || p != eol ||
            strncmp(rq.version, "HTTP/1.", 7) != 0)
                return -EINVAL;
        for (const char *m = rq.method; *m; m++) /* a method is a token: GET, CONNECT, ... */
                if (*m < 'A' || *m > 'Z')
                        return -EINVAL;
        size_t tl = strlen(target);
        if (strcmp(rq.method, "CONNECT") == 0) {
                rq.kind = BUILD_REQUEST_CONNECT; /* host:port, the port after the last ':' */
                if (!authority(target, tl, memrchr(target, ':', tl), "", &rq))
                        return -EPROTO;
        } else if (strncasecmp(target, "http://", 7) == 0) {
                rq.kind = BUILD_REQUEST_PLAIN;
                const char *a = target + 7, *slash = strchr(a, '/');
                size_t al = slash ? (size_t)(slash - a) : strlen(a);
                if (!authority(a, al, memchr(a, ':', al), "80", &rq))
                        return -EPROTO;
                snprintf(rq.path, sizeof(rq.path), "%s", slash ? slash : "/");
        } else {
                return -EPROTO;
        }
        int r = body(head, head_len, &rq);
        if (r < 0)
                return r;
        *ret = rq;
        return 0;
}

/* Whether header line line (len bytes) is one of names' (lowercase, each with its colon). */
static bool named(const char *line, size_t len, const char *const *names, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (len >= strlen(names[i]) && strncasecmp(line, names[i], strlen(names[i])) == 0)
                        return true;
        return false;
}

/* The header lines from line to end (the blank line's CRLF) into out after its first o bytes,
 * but those named in drop, then "Connection: close" and the blank line: the head's length, or
 * -ENOBUFS. */
static int copy_headers(const char *line, const char *end, const char *const *drop, size_t n_drop,
                        char *out, size_t o, size_t size)
{
        while (line < end) {
                const char *eol = memchr(line, '\n', (size_t)(end - line));
                size_t l = eol ? (size_t)(eol - line) + 1 : (size_t)(end - line);
                if (!named(line, l, drop, n_drop)) {
                        if (o + l >= size)
                                return -ENOBUFS;
                        memcpy(out + o, line, l);
                        o += l;
                }
                line += l;
        }
        static const char close_[] = "Connection: close\r\n\r\n";
        if (o + sizeof(close_) > size)
                return -ENOBUFS;
        memcpy(out + o, close_, sizeof(close_));
        return (int)(o + sizeof(close_) - 1);
}

int build_request_rewrite(const char *head, const struct build_request *rq, char *out, size_t size)
{
        /* Dropped on the way to a mirror: the connection's own headers, the proxy's, and Host
         * (the mirror's own name is sent instead: a CDN routes by it). */
        static const char *const drop[] = {
            "connection:", "proxy-connection:", "keep-alive:", "proxy-authorization:", "host:"};
        int n = snprintf(out, size, "%s %s %s\r\nHost: %s\r\n", rq->method, rq->path, rq->version,
                         rq->host);
        if (n < 0 || (size_t)n >= size)
                return -ENOBUFS;
        const char *end = head + rq->head_len - 2; /* the blank line's CRLF */
        const char *line = memchr(head, '\n', rq->head_len);
        return copy_headers(line ? line + 1 : end, end, drop, ELEMENTSOF(drop), out, (size_t)n,
                            size);
}

int build_response_rewrite(const char *head, size_t head_len, char *out, size_t size)
{
        static const char *const drop[] = {"connection:", "keep-alive:", "proxy-connection:"};
        if (head_len < 4 || !unambiguous(head, head_len) || strncmp(head, "HTTP/1.", 7) != 0)
                return -EINVAL;
        const char *end = head + head_len - 2,
                   *line = (const char *)memchr(head, '\n', head_len) + 1;
        size_t o = (size_t)(line - head);
        if (o >= size)
                return -ENOBUFS;
        memcpy(out, head, o);
        return copy_headers(line, end, drop, ELEMENTSOF(drop), out, o, size);
}
