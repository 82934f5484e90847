/* SPDX-License-Identifier: Apache-2.0 */
#include "core/query.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"
#include "url-util.h"

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
        int r = url_percent_decode(s + p, kl, &k);
        if (r < 0)
                return r;
        r = eq ? url_percent_decode(eq + 1, l - kl - 1, &v) : url_percent_decode("", 0, &v);
        if (r < 0)
                return r;
        *pos = p + l;
        *ret_key = TAKE_PTR(k);
        *ret_value = TAKE_PTR(v);
        return 1;
}
