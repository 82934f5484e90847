/* SPDX-License-Identifier: Apache-2.0 */
/* sbx: the command-line client of sbxd's native API. See cli/README.md. */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "version.h"

static const char usage[] =
    "usage: sbx [--json] COMMAND ... | sbx --version\n"
    "  sandbox create [--template T] [--timeout S] [--env K=V]...   prints the id\n"
    "  sandbox list | kill ID\n"
    "  sandbox exec ID 'command' [--timeout-ms N] [--root]        exit code is the command's\n"
    "  sandbox run-code ID [--lang python|node|bash|sh] 'code'\n"
    "  files ls ID [PATH] | files get ID PATH [LOCAL] | files put ID LOCAL PATH\n"
    "  sandbox terminal ID\n"
    "  image import NAME[:TAG] FILE [--ref REF]   an OCI layout or docker save archive\n"
    "  image pull REF [--name NAME[:TAG]] [--username USER --password-stdin]\n"
    "                      an image from its registry (python:3.12, ghcr.io/org/app:1, ...)\n"
    "  image ls | image rm NAME[:TAG]...\n"
    "  keys [--e2b] | status   the lines to export for sbx (--e2b: for the E2B SDKs), sbxd's "
    "state\n"
    "  key create [--name NAME] | key ls | key revoke KEY|PREFIX|NAME   the local sbxd's API\n"
    "                      keys ($SBX_STATE_DIR/keys or --state-dir DIR; as root): in force at "
    "once\n"
    "  storage             the storage pool: size, used, free, and each sandbox's disk\n"
    "  storage grow SIZE   grow the pool's image (e.g. 64G) while sandboxes run\n"
    "  node ls | node drain NAME [--move] | node undrain NAME   cluster nodes (sbxd --cluster);\n"
    "                      --move: its sandboxes move to other nodes (paused to disk, resumed\n"
    "                      there under the same id: files kept, processes restarted)\n"
    "  mcp                 MCP server on stdin/stdout (tools run in one sandbox per session)\n"
    "Configuration: SBX_URL and SBX_API_KEY (else E2B_API_URL / E2B_API_KEY, else the local\n"
    "state dir $SBX_STATE_DIR or /var/lib/sbx: its url and keys files, written by sbxd;\n"
    "http://127.0.0.1:3000 when there is no url file).\n";

int main(int argc, char **argv)
{
        struct cli c = {0};
        int i = 1, r;
        for (; i < argc && argv[i][0] == '-'; i++) {
                if (strcmp(argv[i], "--json") == 0)
                        c.json = true;
                else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                        fputs(usage, stdout);
                        return 0;
                } else if (strcmp(argv[i], "--version") == 0) {
                        printf("sbx %s\n", SBX_VERSION);
                        return 0;
                } else {
                        fputs(usage, stderr);
                        return 2;
                }
        }
        if (i >= argc) {
                fputs(usage, stderr);
                return 2;
        }
        if (cli_config(&c) < 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
                return 1;
        const char *cmd = argv[i++];
        int n = argc - i;
        char **rest = argv + i;
        if (strcmp(cmd, "sandbox") == 0 || strcmp(cmd, "sandboxes") == 0)
                r = cli_cmd_sandbox(&c, n, rest);
        else if (strcmp(cmd, "files") == 0)
                r = cli_cmd_files(&c, n, rest);
        else if (strcmp(cmd, "status") == 0)
                r = cli_cmd_status(&c, n, rest);
        else if (strcmp(cmd, "keys") == 0)
                r = cli_cmd_keys(&c, n, rest);
        else if (strcmp(cmd, "key") == 0)
                r = cli_cmd_key(&c, n, rest);
        else if (strcmp(cmd, "image") == 0 || strcmp(cmd, "images") == 0)
                r = cli_cmd_image(&c, n, rest);
        else if (strcmp(cmd, "node") == 0 || strcmp(cmd, "nodes") == 0)
                r = cli_cmd_node(&c, n, rest);
        else if (strcmp(cmd, "storage") == 0)
                r = cli_cmd_storage(&c, n, rest);
        else if (strcmp(cmd, "mcp") == 0)
                r = cli_cmd_mcp(&c, n, rest);
        else {
                fputs(usage, stderr);
                r = 2;
        }
        curl_global_cleanup();
        cli_done(&c);
        return r;
}
