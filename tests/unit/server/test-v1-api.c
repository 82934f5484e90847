/* SPDX-License-Identifier: Apache-2.0 */
/* Native API pieces that need no running sbxd: /v1 paths, the error shape re-issued from an
 * (untrusted) agent answer, status codes, and the MCP tool table. */
#include <stdlib.h>
#include <string.h>

#include "mcp/mcp.h"
#include "native/v1-relay.h"
#include "native/v1.h"
#include "unit.h"

static void test_paths(void)
{
        char id[ROUTE_ID_MAX];
        const char *rest;
        CHECK(v1_path_split("/v1/sandboxes", id, &rest));
        CHECK_STREQ(id, "");
        CHECK(rest == NULL);
        CHECK(v1_path_split("/v1/sandboxes/", id, &rest));
        CHECK(v1_path_split("/v1/sandboxes/abc", id, &rest));
        CHECK_STREQ(id, "abc");
        CHECK(rest == NULL);
        CHECK(v1_path_split("/v1/sandboxes/abc/", id, &rest));
        CHECK(rest == NULL);
        CHECK(v1_path_split("/v1/sandboxes/abc/fs/list", id, &rest));
        CHECK_STREQ(rest, "/fs/list");
        CHECK(!v1_path_split("/v1/sandboxesx", id, &rest));
        CHECK(!v1_path_split("/v1/sandboxes//exec", id, &rest));
        CHECK(!v1_path_split("/v1/other", id, &rest));
        char longid[200];
        memset(longid, 'a', sizeof(longid));
        memcpy(longid, "/v1/sandboxes/", 14);
        longid[sizeof(longid) - 1] = 0;
        CHECK(!v1_path_split(longid, id, &rest));
        CHECK(route_v1_wants("/v1/sandboxes"));
        CHECK(route_v1_wants("/mcp"));
        CHECK(!route_v1_wants("/v1x"));
        CHECK(!route_v1_wants("/sandboxes"));
        CHECK(!route_v1_wants("/mcpx"));
}

static void test_error_fields(void)
{
        char code[41], msg[1025];
        static const char ours[] = "{\"error\":{\"code\":\"not_found\",\"message\":\"gone\"}}";
        v1_error_fields(ours, strlen(ours), code, msg);
        CHECK_STREQ(code, "not_found");
        CHECK_STREQ(msg, "gone");
        static const char envd[] = "{\"code\":404,\"message\":\"path not found\"}";
        v1_error_fields(envd, strlen(envd), code, msg);
        CHECK_STREQ(code, ""); /* a number is no code: the status decides */
        CHECK_STREQ(msg, "path not found");
        static const char bad[] = "{\"error\":{\"code\":\"Evil\\nCode\",\"message\":\"\"}}";
        v1_error_fields(bad, strlen(bad), code, msg);
        CHECK_STREQ(code, "");
        CHECK_STREQ(msg, "the sandbox refused the request");
        v1_error_fields("not json at all", 15, code, msg);
        CHECK_STREQ(code, "");
        v1_error_fields("", 0, code, msg);
        CHECK_STREQ(msg, "the sandbox refused the request");
        /* a huge message is cut, never copied whole */
        size_t n = 100000;
        char *big = malloc(n + 64);
        strcpy(big, "{\"message\":\"");
        memset(big + 12, 'm', n);
        strcpy(big + 12 + n, "\"}");
        v1_error_fields(big, strlen(big), code, msg);
        CHECK_EQ_INT((int)strlen(msg), 1024);
        free(big);
        static const char longcode[] =
            "{\"error\":{\"code\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"message\":"
            "\"x\"}}";
        v1_error_fields(longcode, strlen(longcode), code, msg);
        CHECK_STREQ(code, "");
}

static void test_status_codes(void)
{
        CHECK_STREQ(v1_status_code(400), "bad_request");
        CHECK_STREQ(v1_status_code(401), "unauthorized");
        CHECK_STREQ(v1_status_code(404), "not_found");
        CHECK_STREQ(v1_status_code(413), "payload_too_large");
        CHECK_STREQ(v1_status_code(502), "sandbox_unavailable");
        CHECK_STREQ(v1_status_code(599), "internal");
}

static void test_tools(void)
{
        cJSON *tools = mcp_tools_list();
        const cJSON *t;
        int n = 0;
        cJSON_ArrayForEach(t, tools)
        {
                const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "inputSchema");
                CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "name")));
                CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(t, "description")));
                /* the embedded schemas are valid JSON objects with required fields */
                CHECK(cJSON_IsObject(schema));
                CHECK(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(schema, "required")));
                n++;
        }
        CHECK_EQ_INT(n, 7);
        cJSON_Delete(tools);
}

int main(void)
{
        test_paths();
        test_error_fields();
        test_status_codes();
        test_tools();
        return unit_finish("test-v1-api");
}
