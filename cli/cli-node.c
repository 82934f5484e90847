/* SPDX-License-Identifier: Apache-2.0 */
/* sbx node ls | drain NAME | undrain NAME: the nodes of a cluster (server/cluster/README.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json-util.h"
#include "macros.h"

static int node_call(struct cli *c, const char *method, const char *path, cJSON **ret)
{
        struct cli_resp r;
        if (cli_http(c, method, path, NULL, NULL, 0, NULL, &r) < 0) {
                cli_resp_done(&r);
                return 1;
        }
        int e = r.status >= 400 ? cli_fail(&r) : 0;
        if (e == 0 && ret)
                *ret = r.len ? cJSON_Parse(r.body) : NULL;
        cli_resp_done(&r);
        return e;
}

static int node_ls(struct cli *c)
{
        _cleanup_json_ cJSON *o = NULL;
        if (node_call(c, "GET", "/v1/nodes", &o) != 0)
                return 1;
        if (c->json) {
                _cleanup_free_ char *t = cJSON_Print(o);
                if (t)
                        printf("%s\n", t);
                return 0;
        }
        printf("%-20s %-24s %9s %9s %s\n", "NAME", "ADDRESS", "SANDBOXES", "CAPACITY", "STATE");
        const cJSON *n;
        cJSON_ArrayForEach(n, o)
        {
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(n, "name");
                const cJSON *addr = cJSON_GetObjectItemCaseSensitive(n, "addr");
                const cJSON *sb = cJSON_GetObjectItemCaseSensitive(n, "sandboxes");
                const cJSON *cap = cJSON_GetObjectItemCaseSensitive(n, "capacity");
                bool drain = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(n, "draining"));
                printf("%-20s %-24s %9.0f %9.0f %s\n",
                       cJSON_IsString(name) ? name->valuestring : "",
                       cJSON_IsString(addr) ? addr->valuestring : "",
                       cJSON_IsNumber(sb) ? sb->valuedouble : 0,
                       cJSON_IsNumber(cap) ? cap->valuedouble : 0, drain ? "draining" : "ready");
        }
        return 0;
}

int cli_cmd_node(struct cli *c, int argc, char **argv)
{
        if (argc == 1 && (strcmp(argv[0], "ls") == 0 || strcmp(argv[0], "list") == 0))
                return node_ls(c);
        if (argc == 2 && (strcmp(argv[0], "drain") == 0 || strcmp(argv[0], "undrain") == 0)) {
                if (strspn(argv[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789._-") != strlen(argv[1]) ||
                    strlen(argv[1]) > 63 || !argv[1][0]) {
                        fprintf(stderr, "sbx: bad node name '%s'\n", argv[1]);
                        return 2;
                }
                char path[128];
                snprintf(path, sizeof(path), "/v1/nodes/%s/drain", argv[1]);
                bool drain = strcmp(argv[0], "drain") == 0;
                if (node_call(c, drain ? "POST" : "DELETE", path, NULL) != 0)
                        return 1;
                if (!c->json)
                        printf("%s %s\n", argv[1],
                               drain ? "draining: no new sandboxes there" : "ready");
                return 0;
        }
        fprintf(stderr, "sbx: node ls | node drain NAME | node undrain NAME (see sbx --help)\n");
        return 2;
}
