/* SPDX-License-Identifier: Apache-2.0 */
#include "interp/code-json.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "macros.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid or truncated. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
        size_t len;
        unsigned cp;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2, cp = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3, cp = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4, cp = s[0] & 0x07;
        else
                return 0;
        if (n < len)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
                return 0;
        return len;
}

size_t utf8_complete_prefix(const char *s, size_t n)
{
        const unsigned char *u = (const unsigned char *)s;
        /* Look back at most 3 bytes for the start of a sequence that needs more bytes. */
        for (size_t back = 1; back <= 3 && back <= n; back++) {
                unsigned char c = u[n - back];
                size_t need;
                if ((c & 0xc0) == 0x80)
                        continue; /* continuation byte: keep looking for the lead */
                if (c >= 0xc2 && c <= 0xdf)
                        need = 2;
                else if (c >= 0xe0 && c <= 0xef)
                        need = 3;
                else if (c >= 0xf0 && c <= 0xf4)
                        need = 4;
                else
                        return n;
                return need > back ? n - back : n;
        }
        return n;
}

int json_add_string(struct buf *b, const char *s, size_t n)
{
        const unsigned char *u = (const unsigned char *)s;
        size_t i = 0;
        int e = buf_add(b, "\"", 1);

        while (e >= 0 && i < n) {
                size_t run = 0, k;
                /* Copy the longest run of bytes that need no escaping at once. */
                while (i + run < n && u[i + run] >= 0x20 && u[i + run] != '"' &&
                       u[i + run] != '\\' && u[i + run] < 0x80)
                        run++;
                if (run) {
                        e = buf_add(b, s + i, run);
                        i += run;
                        continue;
                }
                if (u[i] >= 0x80) {
                        k = utf8_seq(u + i, n - i);
                        if (k) {
                                e = buf_add(b, s + i, k);
                                i += k;
                        } else {
                                e = buf_adds(b, "\\ufffd");
                                i++;
                        }
                        continue;
                }
                switch (u[i]) {
                case '"':
                        e = buf_adds(b, "\\\"");
                        break;
                case '\\':
                        e = buf_adds(b, "\\\\");
                        break;
                case '\n':
                        e = buf_adds(b, "\\n");
                        break;
                case '\r':
                        e = buf_adds(b, "\\r");
                        break;
                case '\t':
                        e = buf_adds(b, "\\t");
                        break;
                default:
                        e = buf_printf(b, "\\u%04x", u[i]);
                        break;
                }
                i++;
        }
        return e < 0 ? e : buf_add(b, "\"", 1);
}

void iso_timestamp(char out[static 40])
{
        struct timespec ts;
        struct tm tm;
        char base[32];

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(out, 40, "%s.%06dZ", base, (int)(ts.tv_nsec / 1000));
}

int bash_quote(struct buf *b, const char *s, size_t n)
{
        int e = buf_adds(b, "$'");
        for (size_t i = 0; e >= 0 && i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
                        e = buf_add(b, &s[i], 1);
                else if (c != 0)
                        e = buf_printf(b, "\\x%02x", c);
        }
        return e < 0 ? e : buf_adds(b, "'");
}

int bash_marker_scan(const char *buf, size_t len, const char *nonce, size_t *ret_start,
                     size_t *ret_end, unsigned *ret_seq, int *ret_status)
{
        char head[64];
        size_t hlen;

        hlen = (size_t)snprintf(head, sizeof(head), "\x1eSBX%s:", nonce);
        for (size_t i = 0; i < len; i++) {
                const char *end;
                size_t avail = len - i;
                unsigned seq;
                int status, used = 0;

                if (buf[i] != '\x1e')
                        continue;
                if (memcmp(buf + i, head, MIN(avail, hlen)) != 0)
                        continue; /* a stray 0x1e: plain data */
                if (avail < hlen) {
                        *ret_start = i; /* maybe the beginning of a marker */
                        return 0;
                }
                end = memchr(buf + i + hlen, '\x1e', avail - hlen);
                if (!end) {
                        if (avail - hlen > 24)
                                continue; /* too long to be ours */
                        *ret_start = i;
                        return 0;
                }
                if (sscanf(buf + i + hlen, "%u:%d%n", &seq, &status, &used) != 2 ||
                    buf + i + hlen + used != end)
                        continue;
                *ret_start = i;
                *ret_end = (size_t)(end - buf) + 1;
                *ret_seq = seq;
                *ret_status = status;
                return 1;
        }
        *ret_start = len;
        return 0;
}
