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
