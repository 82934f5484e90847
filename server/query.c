/* SPDX-License-Identifier: Apache-2.0 */
#include "query.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"

int query_from_target(const char *target, char **ret)
{
        const char *q = target ? strchr(target, '?') : NULL;
        size_t l = 0;
        if (q) {
                q++;
                l = strcspn(q, "#");
        }
        char *s = strndup(q ? q : "", l);
        if (!s)
                return -ENOMEM;
        *ret = s;
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

int query_append(char **buf, const char *key, const char *value)
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

static int hexval(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int query_decode(const char *s, size_t len, char **ret)
{
        _cleanup_free_ char *out = malloc(len + 1);
        size_t o = 0;
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                if (s[i] == '%') {
                        int h, l;
                        if (i + 2 >= len || (h = hexval(s[i + 1])) < 0 ||
                            (l = hexval(s[i + 2])) < 0)
                                return -EINVAL;
                        if (h == 0 && l == 0)
                                return -EINVAL;
                        out[o++] = (char)(h << 4 | l);
                        i += 2;
                } else if (s[i] == '+') {
                        out[o++] = ' ';
                } else if (s[i] == 0) {
                        return -EINVAL;
                } else {
                        out[o++] = s[i];
                }
        }
        out[o] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

int query_next_pair(const char *s, size_t *pos, char **ret_key, char **ret_value)
{
        size_t p = *pos, len = strlen(s);
        while (p < len && s[p] == '&')
                p++;
        if (p >= len) {
                *pos = p;
                return 0;
        }
        size_t l = strcspn(s + p, "&");
        const char *eq = memchr(s + p, '=', l);
        size_t kl = eq ? (size_t)(eq - (s + p)) : l;
        _cleanup_free_ char *k = NULL, *v = NULL;
        int r = query_decode(s + p, kl, &k);
        if (r < 0)
                return r;
        r = eq ? query_decode(eq + 1, l - kl - 1, &v) : query_decode("", 0, &v);
        if (r < 0)
                return r;
        *pos = p + l;
        *ret_key = TAKE_PTR(k);
        *ret_value = TAKE_PTR(v);
        return 1;
}
