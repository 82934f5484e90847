/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sbx mcp`: MCP over stdio, bridged to sbxd's /mcp (streamable HTTP). Each line on stdin is
 * one JSON-RPC message, POSTed with the session id sbxd issued at initialize; each answer is
 * one line on stdout. The tools, the session and its sandbox live in sbxd (server/mcp.h);
 * EOF on stdin ends the session (DELETE /mcp). SBX_MCP_IDLE_TIMEOUT_S is passed on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "macros.h"

/* A JSON-RPC error answer for a message sbxd could not answer itself. */
static void rpc_error(const char *line, const char *msg)
{
        cJSON *in = cJSON_Parse(line), *o = cJSON_CreateObject();
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(in, "id");
        if (id) {
                cJSON_AddStringToObject(o, "jsonrpc", "2.0");
                cJSON_AddItemToObject(o, "id", cJSON_Duplicate(id, 1));
                cJSON *e = cJSON_AddObjectToObject(o, "error");
                cJSON_AddNumberToObject(e, "code", -32603);
                cJSON_AddStringToObject(e, "message", msg);
                char *t = cJSON_PrintUnformatted(o);
                if (t)
                        printf("%s\n", t);
                free(t);
                fflush(stdout);
        }
        cJSON_Delete(in);
        cJSON_Delete(o);
}

int cli_cmd_mcp(struct cli *c, int argc, char **argv)
{
        char session[128] = "", idle[96] = "";
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        const char *it = getenv("SBX_MCP_IDLE_TIMEOUT_S");
        if (it && *it)
                snprintf(idle, sizeof(idle), "Sbx-Mcp-Idle-Timeout: %.32s", it);
        while ((n = getline(&line, &cap, stdin)) >= 0) {
                line[strcspn(line, "\r\n")] = 0;
                if (!*line)
                        continue;
                struct cli_resp r;
                const char *extra = session[0] ? session : idle[0] ? idle : NULL;
                if (cli_http(c, "POST", "/mcp", "application/json", line, strlen(line), extra, &r) <
                    0) {
                        rpc_error(line, "sbxd is not reachable");
                        cli_resp_done(&r);
                        continue;
                }
                if (r.session[0])
                        snprintf(session, sizeof(session), "Mcp-Session-Id: %s", r.session);
                if (r.status == 200 && r.len) {
                        fwrite(r.body, 1, r.len, stdout);
                        fputc('\n', stdout);
                        fflush(stdout);
                } else if (r.status >= 400) {
                        cJSON *o = cJSON_Parse(r.body);
                        if (cJSON_GetObjectItemCaseSensitive(o, "jsonrpc")) {
                                printf("%s\n", r.body);
                                fflush(stdout);
                        } else
                                rpc_error(line, r.status == 404
                                                    ? "the MCP session ended: initialize again"
                                                    : "sbxd refused the message");
                        cJSON_Delete(o);
                }
                cli_resp_done(&r);
        }
        free(line);
        if (session[0]) {
                struct cli_resp r;
                (void)cli_http(c, "DELETE", "/mcp", NULL, NULL, 0, session, &r);
                cli_resp_done(&r);
        }
        return 0;
}
