/* SPDX-License-Identifier: Apache-2.0 */
#include "http/framing.h"

#include <string.h>
#include <strings.h>

static bool is_ows(char c)
{
        return c == ' ' || c == '\t';
}

static bool name_is(const char *name, size_t len, const char *want)
{
        return len == strlen(want) && strncasecmp(name, want, len) == 0;
}

/* One element of a Transfer-Encoding list: "chunked" is the only coding sbxd decodes. */
static void te_element(struct http_framing *f, const char *s, size_t len)
{
        while (len > 0 && is_ows(*s))
                s++, len--;
        while (len > 0 && is_ows(s[len - 1]))
                len--;
        if (len == 0)
                return; /* an empty list element ("chunked,") is allowed and ignored */
        if (len == 7 && strncasecmp(s, "chunked", 7) == 0 && !f->has_te) {
                f->has_te = true;
                return;
        }
        /* gzip, deflate, compress, an unknown coding, or chunked twice */
        f->has_te = true;
        f->te_unsupported = true;
}

void http_framing_header(struct http_framing *f, const char *name, size_t name_len,
                         const char *value, size_t value_len)
{
        if (name_is(name, name_len, "Transfer-Encoding")) {
                size_t start = 0;
                for (size_t i = 0; i <= value_len; i++)
                        if (i == value_len || value[i] == ',') {
                                te_element(f, value + start, i - start);
                                start = i + 1;
                        }
                if (value_len == 0)
                        f->has_te = f->te_unsupported = true;
                return;
        }
        if (!name_is(name, name_len, "Content-Length"))
                return;
        while (value_len > 0 && is_ows(*value))
                value++, value_len--;
        while (value_len > 0 && is_ows(value[value_len - 1]))
                value_len--;
        uint64_t v = 0;
        bool ok = value_len > 0 && value_len <= 19; /* 19 digits always fit in 64 bits */
        for (size_t i = 0; ok && i < value_len; i++) {
                if (value[i] < '0' || value[i] > '9')
                        ok = false;
                else
                        v = v * 10 + (uint64_t)(value[i] - '0');
        }
        if (!ok || (f->has_cl && v != f->cl))
                f->cl_bad = true;
        f->has_cl = true;
        f->cl = v;
}

unsigned http_framing_verdict(struct http_framing *f)
{
        if (f->has_cl && f->has_te) {
                f->status = 400;
                f->message = "Content-Length and Transfer-Encoding together are not allowed "
                             "(RFC 9112 6.3)";
        } else if (f->te_unsupported) {
                f->status = 501;
                f->message = "unsupported Transfer-Encoding: only chunked is accepted";
        } else if (f->cl_bad) {
                f->status = 400;
                f->message = "invalid Content-Length";
        } else {
                f->status = 0;
                f->message = NULL;
        }
        return f->status;
}

size_t http_head_length(const char *buf, size_t len)
{
        for (size_t i = 0; i < len; i++) {
                if (buf[i] != '\n')
                        continue;
                /* a line ends here; an empty line next ends the head, unless it is one of
                 * the empty lines a client may send before the request line */
                size_t j = i + 1;
                if (j < len && buf[j] == '\r')
                        j++;
                if (j < len && buf[j] == '\n') {
                        bool leading = true;
                        for (size_t k = 0; k < i && leading; k++)
                                leading = buf[k] == '\r' || buf[k] == '\n';
                        if (!leading)
                                return j + 1;
                }
        }
        return 0;
}

static bool tchar(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* "METHOD SP target SP HTTP/1.x": the method a token, the target without controls or
 * spaces. */
static bool request_line_ok(const char *s, size_t len)
{
        size_t i = 0;
        while (i < len && tchar(s[i]))
                i++;
        if (i == 0 || i >= len || s[i] != ' ')
                return false;
        size_t t = ++i;
        while (i < len && (unsigned char)s[i] > 0x20 && s[i] != 0x7f)
                i++;
        if (i == t || i >= len || s[i] != ' ')
                return false;
        i++;
        return len - i == 8 && strncmp(s + i, "HTTP/1.", 7) == 0 &&
               (s[i + 7] == '0' || s[i + 7] == '1');
}

unsigned http_framing_check_head(const char *head, size_t len, const char **ret_message)
{
        struct http_framing f = {};
        size_t i = 0;
        while (i < len && (head[i] == '\r' || head[i] == '\n'))
                i++;
        bool first = true;
        while (i < len) {
                const char *nl = memchr(head + i, '\n', len - i);
                size_t end = nl ? (size_t)(nl - head) : len;
                size_t l = end - i;
                if (l > 0 && head[i + l - 1] == '\r')
                        l--;
                const char *line = head + i;
                i = end + 1;
                if (memchr(line, 0, l)) {
                        *ret_message = "malformed request head: NUL byte";
                        return 400;
                }
                if (first) {
                        first = false;
                        if (!request_line_ok(line, l)) {
                                *ret_message = "malformed request line";
                                return 400;
                        }
                        continue;
                }
                if (l == 0)
                        break; /* the blank line */
                const char *colon = memchr(line, ':', l);
                if (is_ows(line[0])) {
                        *ret_message = "obsolete header line folding is not accepted";
                        return 400;
                }
                if (!colon || colon == line) {
                        *ret_message = "malformed header line";
                        return 400;
                }
                size_t nl_len = (size_t)(colon - line);
                for (size_t k = 0; k < nl_len; k++)
                        if (!tchar(line[k])) {
                                *ret_message = "malformed header name";
                                return 400;
                        }
                http_framing_header(&f, line, nl_len, colon + 1, l - nl_len - 1);
        }
        unsigned st = http_framing_verdict(&f);
        *ret_message = f.message;
        return st;
}
