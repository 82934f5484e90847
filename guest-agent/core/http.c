/* SPDX-License-Identifier: Apache-2.0 */
#include "core/http.h"

#include <ctype.h>
#include <errno.h>
#include <nettle/base64.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "macros.h"
#include "url-util.h"

int http_query_get(const char *query, const char *key, char **ret)
{
        size_t klen = strlen(key);

        if (!query)
                return 0;
        for (const char *p = query; *p;) {
                const char *end = strchrnul(p, '&');
                const char *eq = memchr(p, '=', (size_t)(end - p));
                const char *kend = eq ? eq : end;
                _cleanup_free_ char *k = NULL;
                int r;

                if (kend > p) {
                        r = url_percent_decode(p, (size_t)(kend - p), &k);
                        if (r < 0)
                                return r;
                        if (strlen(k) == klen && memcmp(k, key, klen) == 0) {
                                if (!eq)
                                        return url_percent_decode("", 0, ret) < 0 ? -ENOMEM : 1;
                                r = url_percent_decode(eq + 1, (size_t)(end - eq - 1), ret);
                                return r < 0 ? r : 1;
                        }
                }
                p = *end ? end + 1 : end;
        }
        return 0;
}

int http_basic_auth_user(const char *header, char **ret_user)
{
        struct base64_decode_ctx ctx;
        const char *p = header;
        size_t n, cap, outlen;

        if (!header)
                return 0;
        while (*p == ' ' || *p == '\t')
                p++;
        if (strncasecmp(p, "basic", 5) != 0 || (p[5] != ' ' && p[5] != '\t'))
                return 0;
        p += 5;
        while (*p == ' ' || *p == '\t')
                p++;
        n = strlen(p);
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
                n--;
        if (n == 0)
                return -EINVAL;

        cap = BASE64_DECODE_LENGTH(n) + 1;
        _cleanup_free_ char *out = malloc(cap);
        if (!out)
                return -ENOMEM;
        base64_decode_init(&ctx);
        outlen = cap - 1;
        if (!base64_decode_update(&ctx, &outlen, (uint8_t *)out, n, p) ||
            !base64_decode_final(&ctx))
                return -EINVAL;
        if (memchr(out, '\0', outlen))
                return -EINVAL;
        out[outlen] = '\0';
        char *colon = strchr(out, ':');
        if (!colon)
                return -EINVAL;
        *colon = '\0';
        *ret_user = TAKE_PTR(out);
        return 1;
}

int http_media_type(const char *content_type, char **ret)
{
        const char *p = content_type ? content_type : "";
        size_t n;
        char *s;

        while (*p == ' ' || *p == '\t')
                p++;
        n = strcspn(p, ";");
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
                n--;
        s = strndup(p, n);
        if (!s)
                return -ENOMEM;
        for (char *q = s; *q; q++)
                *q = (char)tolower((unsigned char)*q);
        *ret = s;
        return 0;
}

int http_header_param(const char *value, const char *name, char **ret)
{
        size_t nlen = strlen(name);
        const char *p;

        if (!value)
                return 0;
        p = strchr(value, ';');
        while (p) {
                p++;
                while (*p == ' ' || *p == '\t')
                        p++;
                const char *eq = strchr(p, '=');
                if (!eq)
                        return 0;
                const char *kend = eq;
                while (kend > p && (kend[-1] == ' ' || kend[-1] == '\t'))
                        kend--;
                const char *v = eq + 1;
                while (*v == ' ' || *v == '\t')
                        v++;
                int match = (size_t)(kend - p) == nlen && strncasecmp(p, name, nlen) == 0;
                _cleanup_free_ char *out = malloc(strlen(v) + 1);
                size_t o = 0;
                if (!out)
                        return -ENOMEM;
                if (*v == '"') {
                        v++;
                        while (*v && *v != '"') {
                                if (*v == '\\' && v[1])
                                        v++;
                                out[o++] = *v++;
                        }
                        if (*v != '"')
                                return -EINVAL;
                        v++;
                        p = strchr(v, ';');
                } else {
                        size_t n = strcspn(v, ";");
                        while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
                                n--;
                        memcpy(out, v, n);
                        o = n;
                        p = strchr(v, ';');
                }
                out[o] = '\0';
                if (match) {
                        *ret = TAKE_PTR(out);
                        return 1;
                }
        }
        return 0;
}
