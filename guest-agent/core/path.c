/* SPDX-License-Identifier: Apache-2.0 */
#include "core/path.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "macros.h"
#include "path-util.h"

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
        (void)path_clean(s, s, strlen(s) + 1); /* absolute: fits in place */
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
