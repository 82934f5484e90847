/* SPDX-License-Identifier: Apache-2.0 */
/* Path resolution relative to a user's home, as envd's ExpandAndResolve. */
#include <errno.h>
#include <stdlib.h>

#include "core/path.h"
#include "unit.h"

static void check_resolve(const char *path, const char *workdir, const char *expected)
{
        char *r = NULL;
        CHECK_EQ_INT(agent_path_resolve(path, "/home/user", workdir, &r), 0);
        CHECK_STREQ(r, expected);
        free(r);
}

int main(void)
{
        char *r = NULL;

        check_resolve("/home/user/a.txt", NULL, "/home/user/a.txt");
        check_resolve("a.txt", NULL, "/home/user/a.txt");
        check_resolve("b/c.txt", "/srv", "/home/user/b/c.txt");
        check_resolve("./x/../y//z/", NULL, "/home/user/y/z");
        check_resolve("../../../../etc/passwd", NULL, "/etc/passwd");
        check_resolve("/../..", NULL, "/");
        check_resolve("~", NULL, "/home/user");
        check_resolve("~/.bashrc", NULL, "/home/user/.bashrc");
        check_resolve("", NULL, "/home/user");
        check_resolve(NULL, NULL, "/home/user");
        check_resolve("", "/srv/app", "/srv/app");
        check_resolve("/", NULL, "/");
        check_resolve("/a/./b/.", NULL, "/a/b");
        check_resolve("...", NULL, "/home/user/...");
        CHECK_EQ_INT(agent_path_resolve("~root/x", "/home/user", NULL, &r), -EINVAL);
        CHECK_STREQ(agent_path_basename("/home/user/a.txt"), "a.txt");
        CHECK_STREQ(agent_path_basename("/"), "/");
        return unit_finish("test-agent-path");
}
