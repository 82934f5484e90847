/* SPDX-License-Identifier: Apache-2.0 */
#include "url-util.h"

#include <errno.h>
#include <stdlib.h>

#include "macros.h"

static int unhex(char c)
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
                        hi = unhex(s[i + 1]);
                        lo = unhex(s[i + 2]);
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
