/* SPDX-License-Identifier: Apache-2.0 */
#include "path-util.h"

#include <errno.h>
#include <string.h>

int path_clean(const char *path, char *out, size_t len)
{
        size_t o = 0;
        if (len < 2)
                return -ENAMETOOLONG;
        for (const char *p = path; *p;) {
                size_t n = strcspn(p, "/");
                if (n == 0 || (n == 1 && p[0] == '.')) {
                        /* empty or "." */
                } else if (n == 2 && p[0] == '.' && p[1] == '.') {
                        while (o > 0 && out[o - 1] != '/')
                                o--;
                        if (o > 0)
                                o--; /* the '/' before the dropped component */
                } else {
                        if (o + 1 + n + 1 > len)
                                return -ENAMETOOLONG;
                        /* in place, the '/' written is the one read before this component */
                        out[o++] = '/';
                        memmove(out + o, p, n);
                        o += n;
                }
                p += n;
                if (*p == '/')
                        p++;
        }
        if (o == 0)
                out[o++] = '/';
        out[o] = 0;
        return 0;
}
