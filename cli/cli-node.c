/* SPDX-License-Identifier: Apache-2.0 */
/* sbx node ls | drain NAME [--move] | undrain NAME: the nodes of a cluster
 * (server/cluster/README.md). */
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

/* The drain --move answer: one line per sandbox. */
static void print_moves(const cJSON *o)
{
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(o, "sandboxes"), *it;
        cJSON_ArrayForEach(it, items)
        {
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "sandboxID");
                const cJSON *out = cJSON_GetObjectItemCaseSensitive(it, "outcome");
                const cJSON *node = cJSON_GetObjectItemCaseSensitive(it, "node");
                const cJSON *why = cJSON_GetObjectItemCaseSensitive(it, "reason");
                printf("%-22s %-6s %s\n", cJSON_IsString(id) ? id->valuestring : "?",
                       cJSON_IsString(out) ? out->valuestring : "?",
                       cJSON_IsString(node)  ? node->valuestring
                       : cJSON_IsString(why) ? why->valuestring
                                             : "");
        }
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "moved");
        const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "kept");
        printf("%.0f moved, %.0f kept\n", cJSON_IsNumber(m) ? m->valuedouble : 0,
               cJSON_IsNumber(k) ? k->valuedouble : 0);
}

int cli_cmd_node(struct cli *c, int argc, char **argv)
{
        if (argc == 1 && (strcmp(argv[0], "ls") == 0 || strcmp(argv[0], "list") == 0))
                return node_ls(c);
        bool move = argc == 3 && strcmp(argv[0], "drain") == 0 && strcmp(argv[2], "--move") == 0;
        if ((argc == 2 || move) &&
            (strcmp(argv[0], "drain") == 0 || strcmp(argv[0], "undrain") == 0)) {
                if (strspn(argv[1], "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789._-") != strlen(argv[1]) ||
                    strlen(argv[1]) > 63 || !argv[1][0]) {
                        fprintf(stderr, "sbx: bad node name '%s'\n", argv[1]);
                        return 2;
                }
                char path[128];
                snprintf(path, sizeof(path), "/v1/nodes/%s/drain%s", argv[1],
                         move ? "?move=1" : "");
                bool drain = strcmp(argv[0], "drain") == 0;
                _cleanup_json_ cJSON *o = NULL;
                if (node_call(c, drain ? "POST" : "DELETE", path, move ? &o : NULL) != 0)
                        return 1;
                if (c->json && o) {
                        _cleanup_free_ char *t = cJSON_Print(o);
                        if (t)
                                printf("%s\n", t);
                } else if (!c->json) {
                        printf("%s %s\n", argv[1],
                               drain ? "draining: no new sandboxes there" : "ready");
                        if (move)
                                print_moves(o);
                }
                const cJSON *kept = cJSON_GetObjectItemCaseSensitive(o, "kept");
                return cJSON_IsNumber(kept) && kept->valuedouble > 0 ? 3 : 0;
        }
        fprintf(stderr, "sbx: node ls | node drain NAME [--move] | node undrain NAME (see sbx "
                        "--help)\n");
        return 2;
}
