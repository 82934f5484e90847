/* SPDX-License-Identifier: Apache-2.0 */
/* The console's file table (ui/ui-files.h): what is taken from the console dir, what is left
 * out, and the pure helpers a request goes through. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "ui/ui-files.h"
#include "unit.h"

static char root[] = "/tmp/sbx-ui-test-XXXXXX";

static void put(const char *rel, const char *content)
{
        char p[512];
        snprintf(p, sizeof(p), "%s/%s", root, rel);
        CHECK(write_file_atomic(p, content, strlen(content), 0644) == 0);
}

static void test_names(void)
{
        CHECK(ui_name_valid("index.html"));
        CHECK(ui_name_valid("js/app.js"));
        CHECK(ui_name_valid("vendor/xterm.css"));
        CHECK(!ui_name_valid(""));
        CHECK(!ui_name_valid("../keys"));
        CHECK(!ui_name_valid("js/../../keys"));
        CHECK(!ui_name_valid(".hidden"));
        CHECK(!ui_name_valid("js/.x.js"));
        CHECK(!ui_name_valid("js//app.js"));
        CHECK(!ui_name_valid("/etc/passwd"));
        CHECK(!ui_name_valid("js/"));
        CHECK(!ui_name_valid("a b.js"));
        CHECK(!ui_name_valid("x%2f.js"));
        char longname[UI_MAX_NAME + 8];
        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = 0;
        CHECK(!ui_name_valid(longname));
}

static void test_types(void)
{
        CHECK_STREQ(ui_content_type("index.html"), "text/html; charset=utf-8");
        CHECK_STREQ(ui_content_type("js/app.js"), "text/javascript; charset=utf-8");
        CHECK_STREQ(ui_content_type("a.css"), "text/css; charset=utf-8");
        CHECK_STREQ(ui_content_type("f.svg"), "image/svg+xml");
        CHECK(ui_content_type("README.md") == NULL);
        CHECK(ui_content_type("noext") == NULL);
        CHECK(ui_content_type("x.js.map") == NULL);
        CHECK(ui_content_type("dir.js/file") == NULL);
}

static void test_etags(void)
{
        const char *e = "\"0123456789abcdef\"";
        CHECK(ui_etag_matches(e, e));
        CHECK(ui_etag_matches("W/\"0123456789abcdef\"", e));
        CHECK(ui_etag_matches("\"other\", \"0123456789abcdef\"", e));
        CHECK(ui_etag_matches("*", e));
        CHECK(!ui_etag_matches("\"0123456789abcdee\"", e));
        CHECK(!ui_etag_matches("0123456789abcdef", e));
        CHECK(!ui_etag_matches("", e));
}

static void test_load(void)
{
        CHECK(mkdtemp(root) != NULL);
        char p[512];
        snprintf(p, sizeof(p), "%s/js", root);
        CHECK(mkdir(p, 0755) == 0);
        put("index.html", "<!doctype html>");
        put("js/app.js", "console.log(1)\n");
        put("README.md", "not served");
        put(".secret.js", "hidden");
        put("js/app.js.map", "{}");
        /* a symlink to a file outside, under a servable name: never followed */
        snprintf(p, sizeof(p), "%s/passwd.txt", root);
        CHECK(symlink("/etc/passwd", p) == 0);

        struct ui_files *u = NULL;
        CHECK_EQ_INT(ui_files_load(root, &u), 0);
        if (!u)
                return;
        CHECK_EQ_INT(u->n, 2);
        const struct ui_file *f = ui_files_find(u, "js/app.js");
        CHECK(f && f->len == strlen("console.log(1)\n"));
        CHECK(f && memcmp(f->data, "console.log(1)\n", f->len) == 0);
        CHECK(f && strlen(f->etag) == UI_ETAG_LEN && f->etag[0] == '"');
        CHECK(f && strcmp(f->content_type, "text/javascript; charset=utf-8") == 0);
        CHECK(ui_files_find(u, "index.html") != NULL);
        CHECK(ui_files_find(u, "README.md") == NULL);
        CHECK(ui_files_find(u, ".secret.js") == NULL);
        CHECK(ui_files_find(u, "passwd.txt") == NULL);
        CHECK(ui_files_find(u, "js/../index.html") == NULL);
        /* the same content, the same ETag; another content, another */
        const struct ui_file *i = ui_files_find(u, "index.html");
        CHECK(i && f && strcmp(i->etag, f->etag) != 0);
        ui_files_free(u);

        /* a dir without index.html is no console */
        snprintf(p, sizeof(p), "%s/js", root);
        CHECK_EQ_INT(ui_files_load(p, &u), -ENOENT);
        CHECK_EQ_INT(ui_files_load("/nonexistent-sbx-ui", &u), -ENOENT);
        CHECK(rm_rf(root) == 0);
}

int main(void)
{
        test_names();
        test_types();
        test_etags();
        test_load();
        printf("%d checks, %d failures\n", unit_checks, unit_failures);
        return unit_failures != 0;
}
