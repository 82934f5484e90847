/* SPDX-License-Identifier: Apache-2.0 */
/* The CLI core: URL escaping and where the configuration comes from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "unit.h"

static void test_escape(void)
{
        char *e = cli_escape("/home/user/a b&c=d?%");
        CHECK_STREQ(e, "/home/user/a%20b%26c%3Dd%3F%25");
        free(e);
        e = cli_escape("caf\xc3\xa9~._-");
        CHECK_STREQ(e, "caf%C3%A9~._-");
        free(e);
}

static void test_config(void)
{
        struct cli c = {0};
        char dir[] = "/tmp/sbx-cli-test-XXXXXX", path[64];
        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/keys", dir);
        FILE *f = fopen(path, "w");
        /* the first key of the keys file (api/keys-file.h): comments and labels skipped */
        fputs("# keys\nnot a key\ne2b_00112233445566778899aabbccddeeff00112233 # name=ci\n"
              "e2b_ffffffffffffffffffffffffffffffffffffffff\n",
              f);
        fclose(f);

        unsetenv("SBX_URL");
        unsetenv("SBX_API_KEY");
        unsetenv("E2B_API_URL");
        unsetenv("E2B_API_KEY");
        setenv("SBX_STATE_DIR", dir, 1);
        CHECK_EQ_INT(cli_config(&c), 0);
        CHECK_STREQ(c.url, "http://127.0.0.1:3000");
        CHECK_STREQ(c.key, "e2b_00112233445566778899aabbccddeeff00112233");
        cli_done(&c);

        setenv("E2B_API_URL", "http://e2b:1/", 1);
        setenv("E2B_API_KEY", "e2b_env", 1);
        c = (struct cli){0};
        CHECK_EQ_INT(cli_config(&c), 0);
        CHECK_STREQ(c.url, "http://e2b:1"); /* trailing slash dropped */
        CHECK_STREQ(c.key, "e2b_env");
        cli_done(&c);

        setenv("SBX_URL", "http://sbx:2", 1);
        setenv("SBX_API_KEY", "e2b_sbx", 1);
        c = (struct cli){0};
        CHECK_EQ_INT(cli_config(&c), 0);
        CHECK_STREQ(c.url, "http://sbx:2");
        CHECK_STREQ(c.key, "e2b_sbx");
        cli_done(&c);
        unlink(path);
        rmdir(dir);
}

int main(void)
{
        test_escape();
        test_config();
        return unit_finish("test-cli");
}
