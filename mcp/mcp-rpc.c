/* SPDX-License-Identifier: Apache-2.0 */
/* One JSON-RPC 2.0 message of MCP's streamable HTTP, parsed as untrusted input. */
#include <errno.h>
#include <string.h>

#include "mcp-internal.h"

int mcp_rpc_parse(const char *body, size_t len, struct mcp_rpc *ret, const char **ret_msg)
{
        *ret = (struct mcp_rpc){0};
        if (json_depth(body ? body : "", len) > MCP_JSON_MAX_DEPTH) {
                *ret_msg = "JSON nested too deeply";
                return -32700;
        }
        cJSON *msg = body ? cJSON_ParseWithLength(body, len) : NULL;
        if (!msg) {
                *ret_msg = "parse error: the body must be JSON";
                return -32700;
        }
        if (!cJSON_IsObject(msg)) {
                cJSON_Delete(msg);
                *ret_msg = "invalid request: send one JSON-RPC message (no batches)";
                return -32600;
        }
        const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
        ret->msg = msg;
        ret->method = cJSON_IsString(method) ? method->valuestring : NULL;
        ret->response = !ret->method && (cJSON_GetObjectItemCaseSensitive(msg, "result") ||
                                         cJSON_GetObjectItemCaseSensitive(msg, "error"));
        ret->id = cJSON_GetObjectItemCaseSensitive(msg, "id");
        ret->params = cJSON_GetObjectItemCaseSensitive(msg, "params");
        return 0;
}

void mcp_rpc_done(struct mcp_rpc *r)
{
        cJSON_Delete(r->msg);
        *r = (struct mcp_rpc){0};
}

cJSON *mcp_rpc_message(const cJSON *id, cJSON *result, int code, const char *msg)
{
        cJSON *o = cJSON_CreateObject();
        if (!o) {
                cJSON_Delete(result);
                return NULL;
        }
        cJSON_AddStringToObject(o, "jsonrpc", "2.0");
        cJSON_AddItemToObject(o, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
        if (result)
                cJSON_AddItemToObject(o, "result", result);
        else {
                cJSON *e = cJSON_AddObjectToObject(o, "error");
                cJSON_AddNumberToObject(e, "code", code);
                cJSON_AddStringToObject(e, "message", msg);
        }
        return o;
}
