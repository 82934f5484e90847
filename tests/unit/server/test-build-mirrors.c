/* SPDX-License-Identifier: Apache-2.0 */
/* The hosts template builds may reach (server/template-build/build-mirrors.h):
 * SBX_BUILD_EGRESS_HOSTS replaces the apt sources, lowercased, each once. */
#include <stdlib.h>
#include <string.h>

#include "template-build/build-mirrors.h"
#include "unit.h"

static void test_env(void)
{
        char **v = NULL;
        size_t n = 0;
        setenv(BUILD_MIRRORS_ENV, "Deb.Debian.org,mirror.example:8080,,deb.debian.org", 1);
        CHECK_EQ_INT(build_mirror_hosts(&v, &n), 0);
        CHECK_EQ_INT(n, 2);
        CHECK(n == 2 && strcmp(v[0], "deb.debian.org") == 0);
        CHECK(n == 2 && strcmp(v[1], "mirror.example:8080") == 0);
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
        unsetenv(BUILD_MIRRORS_ENV);
}

int main(void)
{
        test_env();
        return unit_finish("test-build-mirrors");
}
