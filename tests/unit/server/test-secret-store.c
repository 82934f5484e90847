/* SPDX-License-Identifier: Apache-2.0 */
/* The secret store (storage/secret-store.h): checks, create/update/delete by id and by name,
 * values only through secret_store_value(), records 0600 that a new store loads again, list
 * order that is creation order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fd-util.h"
#include "storage/secret-store.h"
#include "unit.h"

int main(void)
{
        char dir[] = "/tmp/sbx-secret-test.XXXXXX";
        if (!mkdtemp(dir))
                return 1;
        char lower[SECRET_NAME_MAX + 1];
        CHECK(secret_name_check("Api-Key", lower) == NULL);
        CHECK_STREQ(lower, "api-key");
        CHECK(secret_name_check("", lower) != NULL);
        CHECK(secret_name_check("a}b", lower) != NULL);
        CHECK(secret_name_check("sec_x", lower) != NULL);
        CHECK(secret_name_check("a b", lower) != NULL);
        CHECK(secret_value_check("ok\tvalue") == NULL);
        CHECK(secret_value_check("a\nb") != NULL);
        CHECK(secret_value_check("a\x01"
                                 "b") != NULL);
        CHECK(secret_value_check("") != NULL);

        struct secret_store *s;
        CHECK_EQ_INT(secret_store_open(dir, &s), 0);
        struct secret_info a, b, g;
        cJSON *meta = cJSON_Parse("{\"k\":\"v\"}");
        CHECK_EQ_INT(secret_create(s, "One", "value-1", meta, &a), 0);
        CHECK_STREQ(a.name, "one");
        CHECK_EQ_INT(a.version, 1);
        CHECK_EQ_INT(strncmp(a.id, "sec_", 4), 0);
        CHECK_EQ_INT(secret_create(s, "ONE", "x", NULL, &b), -EEXIST);
        CHECK_EQ_INT(secret_create(s, "two", "value-2", NULL, &b), 0);
        char v[64];
        CHECK_EQ_INT(secret_store_value(s, "one", v, sizeof(v)), 7);
        CHECK_STREQ(v, "value-1");
        CHECK_EQ_INT(secret_store_value(s, "one", v, 4), -ENOBUFS);
        CHECK_EQ_INT(secret_store_value(s, "nope", v, sizeof(v)), -ENOENT);
        CHECK_EQ_INT(secret_update(s, a.id, "value-1b", NULL, &g), 0);
        CHECK_EQ_INT(g.version, 2);
        CHECK(g.metadata && cJSON_GetObjectItem(g.metadata, "k")); /* kept when not given */
        secret_info_done(&g);
        CHECK_EQ_INT(secret_update(s, "nope", "x", NULL, &g), -ENOENT);

        char path[256];
        struct stat st;
        snprintf(path, sizeof(path), "%s/secrets/%s.json", dir, a.id);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
        snprintf(path, sizeof(path), "%s/secrets", dir);
        CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700);
        secret_store_free(s);

        /* a new store reads the records again */
        CHECK_EQ_INT(secret_store_open(dir, &s), 0);
        struct secret_info *all = NULL;
        size_t n = 0;
        CHECK_EQ_INT(secret_list(s, &all, &n), 0);
        CHECK_EQ_INT(n, 2);
        if (n == 2) {
                CHECK_STREQ(all[0].name, "one");
                CHECK_EQ_INT(all[0].version, 2);
        }
        for (size_t i = 0; i < n; i++)
                secret_info_done(&all[i]);
        free(all);
        CHECK_EQ_INT(secret_store_value(s, "ONE", v, sizeof(v)), 8);
        CHECK_STREQ(v, "value-1b");
        CHECK_EQ_INT(secret_get(s, "two", &g), 0);
        secret_info_done(&g);
        CHECK_EQ_INT(secret_delete(s, "two"), 0);
        CHECK_EQ_INT(secret_delete(s, b.id), -ENOENT);
        CHECK_EQ_INT(secret_get(s, b.id, &g), -ENOENT);

        /* secrets made back to back (many in one millisecond) list in the order they were made,
         * in this store and in a store that loads them again */
        for (int i = 0; i < 20; i++) {
                char name[32];
                snprintf(name, sizeof(name), "burst-%02d", i);
                CHECK_EQ_INT(secret_create(s, name, "v", NULL, &g), 0);
                secret_info_done(&g);
        }
        for (int pass = 0; pass < 2; pass++) {
                if (pass == 1) {
                        secret_store_free(s);
                        CHECK_EQ_INT(secret_store_open(dir, &s), 0);
                }
                CHECK_EQ_INT(secret_list(s, &all, &n), 0);
                CHECK_EQ_INT(n, 21);
                for (size_t i = 1; i < n; i++) {
                        char want[32];
                        snprintf(want, sizeof(want), "burst-%02zu", i - 1);
                        CHECK_STREQ(all[i].name, want);
                }
                for (size_t i = 0; i < n; i++)
                        secret_info_done(&all[i]);
                free(all);
        }
        secret_store_free(s);
        secret_info_done(&a);
        secret_info_done(&b);
        cJSON_Delete(meta);
        rm_rf(dir);
        return unit_finish("test-secret-store");
}
