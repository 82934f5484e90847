/* SPDX-License-Identifier: Apache-2.0 */
#include "core/path.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macros.h"

void agent_path_clean(char *path)
{
        /* Input is absolute; output keeps the leading '/' and has no trailing '/'. */
        char *out = path;
        size_t o = 1;
        const char *p = path + 1;

        while (*p) {
                size_t n = strcspn(p, "/");
                if (n == 0 || (n == 1 && p[0] == '.')) {
                        /* empty or "." component */
                } else if (n == 2 && p[0] == '.' && p[1] == '.') {
                        /* drop the previous component, never above "/" */
                        while (o > 1 && out[o - 1] != '/')
                                o--;
                        if (o > 1)
                                o--;
                } else {
                        if (o > 1)
                                out[o++] = '/';
                        memmove(out + o, p, n);
                        o += n;
                }
                p += n;
                if (*p == '/')
                        p++;
        }
        out[o] = '\0';
}

int agent_path_resolve(const char *path, const char *home, const char *default_dir, char **ret)
{
        _cleanup_free_ char *s = NULL;

        if ((!path || !*path) && default_dir && *default_dir)
                path = default_dir;
        if (!path)
                path = "";
        if (path[0] == '~') {
                if (path[1] != '\0' && path[1] != '/')
                        return -EINVAL;
                if (asprintf(&s, "/%s/%s", home, path + 1) < 0)
                        return -ENOMEM;
        } else if (path[0] == '/') {
                s = strdup(path);
                if (!s)
                        return -ENOMEM;
        } else if (asprintf(&s, "/%s/%s", home, path) < 0)
                return -ENOMEM;
        agent_path_clean(s);
        *ret = TAKE_PTR(s);
        return 0;
}

const char *agent_path_basename(const char *path)
{
        const char *slash = strrchr(path, '/');
        if (!slash || slash[1] == '\0')
                return path;
        return slash + 1;
}
