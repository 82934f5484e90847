/* SPDX-License-Identifier: Apache-2.0 */
/* EntryInfo pieces: Go's FileMode.String(), protojson timestamps, EntryInfo of real files. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "envd/entry.h"
#include "unit.h"

static const char *str(const cJSON *o, const char *k)
{
        const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsString(j) ? j->valuestring : NULL;
}

int main(void)
{
        char buf[16], ts[40], dir[] = "/tmp/sbx-entry-XXXXXX", path[64], link[64];
        struct timespec t;
        cJSON *e = NULL;

        CHECK_STREQ(agent_mode_string(S_IFREG | 0644, buf), "-rw-r--r--");
        CHECK_STREQ(agent_mode_string(S_IFDIR | 0755, buf), "drwxr-xr-x");
        CHECK_STREQ(agent_mode_string(S_IFLNK | 0777, buf), "Lrwxrwxrwx");
        CHECK_STREQ(agent_mode_string(S_IFREG | S_ISUID | 0755, buf), "urwxr-xr-x");
        CHECK_STREQ(agent_mode_string(S_IFDIR | S_ISVTX | 0777, buf), "dtrwxrwxrwx");
        CHECK_STREQ(agent_mode_string(S_IFCHR | 0666, buf), "Dcrw-rw-rw-");
        CHECK_STREQ(agent_mode_string(S_IFIFO | 0600, buf), "prw-------");
        CHECK_STREQ(agent_mode_string(S_IFSOCK | 0700, buf), "Srwx------");

        t = (struct timespec){.tv_sec = 1704067200, .tv_nsec = 0};
        CHECK_STREQ(agent_timestamp(&t, ts), "2024-01-01T00:00:00Z");
        t.tv_nsec = 500000000;
        CHECK_STREQ(agent_timestamp(&t, ts), "2024-01-01T00:00:00.500Z");
        t.tv_nsec = 123456000;
        CHECK_STREQ(agent_timestamp(&t, ts), "2024-01-01T00:00:00.123456Z");
        t.tv_nsec = 1;
        CHECK_STREQ(agent_timestamp(&t, ts), "2024-01-01T00:00:00.000000001Z");

        if (!mkdtemp(dir))
                return 1;
        snprintf(path, sizeof(path), "%s/f.txt", dir);
        snprintf(link, sizeof(link), "%s/l", dir);
        FILE *f = fopen(path, "w");
        fputs("hello", f);
        fclose(f);
        chmod(path, 0640);
        CHECK_EQ_INT(symlink("f.txt", link), 0);

        CHECK_EQ_INT(agent_entry_info(path, NULL, NULL, &e), 0);
        CHECK_STREQ(str(e, "name"), "f.txt");
        CHECK_STREQ(str(e, "type"), "FILE_TYPE_FILE");
        CHECK_STREQ(str(e, "path"), path);
        CHECK_STREQ(str(e, "size"), "5");
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(e, "mode")->valueint, 0640);
        CHECK_STREQ(str(e, "permissions"), "-rw-r-----");
        CHECK(str(e, "modifiedTime") != NULL);
        CHECK(str(e, "symlinkTarget") == NULL);
        cJSON_Delete(e);

        /* user.e2b.* xattrs are the metadata (only when the file system has user xattrs). */
        if (setxattr(path, "user.e2b.owner", "me", 2, 0) == 0) {
                (void)setxattr(path, "user.other", "x", 1, 0);
                CHECK_EQ_INT(agent_entry_info(path, NULL, NULL, &e), 0);
                cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "metadata");
                CHECK(cJSON_IsObject(m));
                CHECK_EQ_INT(cJSON_GetArraySize(m), 1);
                CHECK_STREQ(str(m, "owner"), "me");
                cJSON_Delete(e);
        }

        /* envd 0.6.13: a symlink has its target's type and mode, its own permissions string,
         * and the resolved target. */
        CHECK_EQ_INT(agent_entry_info(link, NULL, NULL, &e), 0);
        CHECK_STREQ(str(e, "type"), "FILE_TYPE_FILE");
        CHECK_STREQ(str(e, "symlinkTarget"), path);
        CHECK_STREQ(str(e, "permissions"), "Lrwxrwxrwx");
        CHECK_EQ_INT(cJSON_GetObjectItemCaseSensitive(e, "mode")->valueint, 0640);
        CHECK_STREQ(str(e, "size"), "5"); /* the link's own size: strlen("f.txt") */
        cJSON_Delete(e);

        /* A link to a directory is a directory. */
        unlink(path);
        CHECK_EQ_INT(symlink(".", path), 0);
        CHECK_EQ_INT(agent_entry_info(path, NULL, NULL, &e), 0);
        CHECK_STREQ(str(e, "type"), "FILE_TYPE_DIRECTORY");
        CHECK_STREQ(str(e, "symlinkTarget"), dir);
        cJSON_Delete(e);
        unlink(path);

        /* A dangling link has no type, no mode, and its own path as the target. */
        CHECK_EQ_INT(agent_entry_info(link, NULL, NULL, &e), 0);
        CHECK(str(e, "type") == NULL);
        CHECK(cJSON_GetObjectItemCaseSensitive(e, "mode") == NULL);
        CHECK_STREQ(str(e, "symlinkTarget"), link);
        cJSON_Delete(e);

        CHECK_EQ_INT(agent_entry_info(path, NULL, NULL, &e), -ENOENT);
        unlink(link);
        rmdir(dir);
        return unit_finish("test-agent-entry");
}
