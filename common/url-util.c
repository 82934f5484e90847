/* SPDX-License-Identifier: Apache-2.0 */
#include "url-util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"

int hex_digit_value(int c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int url_percent_decode(const char *s, size_t len, char **ret)
{
        _cleanup_free_ char *out = malloc(len + 1);
        size_t o = 0;

        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                char c = s[i];
                if (c == '%') {
                        int hi, lo;
                        if (i + 2 >= len)
                                return -EINVAL;
                        hi = hex_digit_value((unsigned char)s[i + 1]);
                        lo = hex_digit_value((unsigned char)s[i + 2]);
                        if (hi < 0 || lo < 0)
                                return -EINVAL;
                        c = (char)(hi << 4 | lo);
                        i += 2;
                } else if (c == '+')
                        c = ' ';
                /* A NUL would silently truncate the value for every C caller. */
                if (c == '\0')
                        return -EINVAL;
                out[o++] = c;
        }
        out[o] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

static bool unreserved(unsigned char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '.' || c == '_' || c == '~';
}

static size_t encode_into(char *out, const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t o = 0;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if (unreserved(*p)) {
                        if (out)
                                out[o] = (char)*p;
                        o++;
                } else {
                        if (out) {
                                out[o] = '%';
                                out[o + 1] = hex[*p >> 4];
                                out[o + 2] = hex[*p & 15];
                        }
                        o += 3;
                }
        }
        return o;
}

int url_query_append(char **buf, const char *key, const char *value)
{
        size_t old = *buf ? strlen(*buf) : 0;
        size_t need = old + 1 + encode_into(NULL, key) + (value ? 1 + encode_into(NULL, value) : 0);
        char *n = realloc(*buf, need + 1);
        if (!n)
                return -ENOMEM;
        size_t o = old;
        if (old > 0)
                n[o++] = '&';
        o += encode_into(n + o, key);
        if (value) {
                n[o++] = '=';
                o += encode_into(n + o, value);
        }
        n[o] = 0;
        *buf = n;
        return 0;
}
