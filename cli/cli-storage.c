/* SPDX-License-Identifier: Apache-2.0 */
/* sbx storage | storage grow SIZE: sbxd's storage pool (server/storage/README.md, "Thin
 * storage"): its size, use and free space, and each sandbox's disk. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json-util.h"
#include "macros.h"

static double num(const cJSON *o, const char *name)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
        return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

void cli_disk_figure(const cJSON *o, const char *used_key, const char *size_key, char *buf,
                     size_t len)
{
        const cJSON *used = cJSON_GetObjectItemCaseSensitive(o, used_key);
        double mb = num(o, size_key);
        if (cJSON_IsNumber(used))
                snprintf(buf, len, "%.1f/%.0f MiB", used->valuedouble / 1048576.0, mb);
        else
                snprintf(buf, len, "-/%.0f MiB", mb);
}

static void print_storage(const cJSON *o)
{
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(o, "backend");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "pool"), *s;
        if (!cJSON_IsObject(p)) {
                printf("sandbox disks: %s (no storage pool)\n",
                       cJSON_IsString(b) ? b->valuestring : "?");
                return;
        }
        const cJSON *root = cJSON_GetObjectItemCaseSensitive(p, "root");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(p, "kind");
        printf("storage pool %s (%s)\n", cJSON_IsString(root) ? root->valuestring : "?",
               cJSON_IsString(kind) ? kind->valuestring : "?");
        printf("  size %.0f MiB, used %.0f MiB, free %.0f MiB, reserve %.0f MiB\n",
               num(p, "size") / 1048576, num(p, "used") / 1048576, num(p, "free") / 1048576,
               num(p, "reserve") / 1048576);
        printf("%-22s %-7s %12s %12s %10s\n", "SANDBOX", "STATE", "REFERENCED", "EXCLUSIVE",
               "DISK");
        cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(o, "sandboxes"))
        {
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(s, "id");
                const cJSON *st = cJSON_GetObjectItemCaseSensitive(s, "state");
                printf("%-22s %-7s %8.1f MiB %8.1f MiB %6.0f MiB\n",
                       cJSON_IsString(id) ? id->valuestring : "?",
                       cJSON_IsString(st) ? st->valuestring : "?", num(s, "referenced") / 1048576,
                       num(s, "exclusive") / 1048576, num(s, "diskMB"));
        }
}

static int storage_call(struct cli *c, const char *method, const char *path, const char *body)
{
        struct cli_resp r;
        if (cli_http(c, method, path, "application/json", body, body ? strlen(body) : 0, NULL, &r) <
            0) {
                cli_resp_done(&r);
                return 1;
        }
        int e = r.status >= 400 ? cli_fail(&r) : 0;
        _cleanup_json_ cJSON *o = e == 0 && r.len ? cJSON_Parse(r.body) : NULL;
        if (e == 0 && c->json) {
                _cleanup_free_ char *t = cJSON_Print(o);
                if (t)
                        printf("%s\n", t);
        } else if (e == 0) {
                print_storage(o);
        }
        cli_resp_done(&r);
        return e;
}

int cli_cmd_storage(struct cli *c, int argc, char **argv)
{
        if (argc == 0 ||
            (argc == 1 && (strcmp(argv[0], "ls") == 0 || strcmp(argv[0], "show") == 0)))
                return storage_call(c, "GET", "/v1/storage", NULL);
        if (argc == 2 && strcmp(argv[0], "grow") == 0) {
                if (strspn(argv[1], "0123456789KMGTkmgt") != strlen(argv[1]) || !argv[1][0] ||
                    strlen(argv[1]) > 20) {
                        fprintf(stderr, "sbx: bad size '%s' (e.g. 64G, 512M)\n", argv[1]);
                        return 2;
                }
                char body[64];
                snprintf(body, sizeof(body), "{\"size\":\"%s\"}", argv[1]);
                return storage_call(c, "POST", "/v1/storage/grow", body);
        }
        fprintf(stderr, "sbx: storage | storage grow SIZE (see sbx --help)\n");
        return 2;
}
