/* SPDX-License-Identifier: Apache-2.0 */
/* MCP on its own (mcp/mcp.h) with a fake host: JSON-RPC parsing, sessions, the tool table, a
 * tool call through the host, the code interpreter's NDJSON reader, and untrusted error bodies
 * from a sandbox. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp-internal.h"
#include "mcp-ndjson.h"
#include "unit.h"

/* ---- a fake host: one sandbox, canned answers ---- */

static struct {
        int creates, kills;
        char last_path[256], last_body[1024];
        enum mcp_api last_api;
        int status;
        const char *answer;  /* the body every request gets */
        const char *session; /* the Mcp-Session-Id header sent */
        const char *accept;
} fake;

struct mcp_stream {
        size_t off;
        bool head_read;
};

static int f_create(void *ctx, const char *t, int timeout_s, char id[static MCP_SANDBOX_ID_MAX],
                    char *err, size_t n)
{
        fake.creates++;
        snprintf(id, MCP_SANDBOX_ID_MAX, "sbx%d", fake.creates);
        return 0;
}

static int f_kill(void *ctx, const char *id)
{
        fake.kills++;
        return 0;
}

static int f_state(void *ctx, const char *id)
{
        return 0;
}

static int f_keep_alive(void *ctx, const char *id, int s)
{
        return 0;
}

static int f_open(void *ctx, const char *id, enum mcp_api api, const char *method, const char *path,
                  const char *query, const char *ct, const void *body, size_t len, int timeout_ms,
                  struct mcp_stream **ret)
{
        fake.last_api = api;
        snprintf(fake.last_path, sizeof(fake.last_path), "%s %s%s%s", method, path,
                 query ? "?" : "", query ? query : "");
        snprintf(fake.last_body, sizeof(fake.last_body), "%.*s", (int)len, (const char *)body);
        *ret = calloc(1, sizeof(**ret));
        return 0;
}

static int f_read_head(struct mcp_stream *st, const atomic_bool *cancel, int64_t deadline,
                       char *ctype, size_t n)
{
        snprintf(ctype, n, "application/json");
        return fake.status;
}

static int f_read(struct mcp_stream *st, const atomic_bool *cancel, int64_t deadline,
                  const void **data, size_t *len)
{
        size_t total = strlen(fake.answer);
        if (st->off >= total)
                return 0;
        /* in pieces of 7 bytes, to cut lines anywhere */
        *data = fake.answer + st->off;
        *len = total - st->off < 7 ? total - st->off : 7;
        st->off += *len;
        return 1;
}

static void f_close(struct mcp_stream *st)
{
        free(st);
}

static const char *f_header(void *ctx, const char *name)
{
        if (strcasecmp(name, "Mcp-Session-Id") == 0)
                return fake.session;
        if (strcasecmp(name, "Accept") == 0)
                return fake.accept;
        return NULL;
}

static cJSON *post(struct mcp *m, const char *body, unsigned want_status,
                   struct mcp_http_response *out)
{
        struct mcp_http_request in = {"POST", body, strlen(body), f_header, NULL, NULL};
        CHECK_EQ_INT(mcp_handle(m, &in, out), 0);
        CHECK_EQ_INT(out->status, want_status);
        cJSON *o = out->body ? cJSON_Parse(out->body) : NULL;
        return o;
}

/* tools/call of the tool name with the JSON object args as request id (answered 200) */
static cJSON *call_tool(struct mcp *m, int id, const char *name, const char *args,
                        struct mcp_http_response *out)
{
        char body[512];
        snprintf(body, sizeof(body),
                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
                 "\"%s\",\"arguments\":%s}}",
                 id, name, args);
        return post(m, body, 200, out);
}

/* The "code" of an answer's "error" member. */
static const cJSON *error_code(const cJSON *answer)
{
        return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(answer, "error"),
                                                "code");
}

/* Done with a post()'s answer o and its response. */
static void answer_done(cJSON *o, struct mcp_http_response *out)
{
        cJSON_Delete(o);
        mcp_http_response_done(out);
}

static const char *text_of(const cJSON *answer)
{
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(answer, "result");
        const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(r, "content"), 0);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(c, "text");
        return cJSON_IsString(t) ? t->valuestring : "";
}

static void test_session(void)
{
        struct mcp_host host = {NULL,   f_create,    f_kill, f_state, f_keep_alive,
                                f_open, f_read_head, f_read, f_close};
        struct mcp *m = mcp_new(&host);
        struct mcp_http_response out;
        fake.session = NULL;

        /* initialize issues the session */
        cJSON *o = post(m,
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                        "{\"protocolVersion\":\"2025-03-26\"}}",
                        200, &out);
        CHECK_EQ_INT(out.n_headers, 1);
        CHECK_STREQ(out.headers[0].name, "Mcp-Session-Id");
        char sid[MCP_SESSION_ID_MAX];
        snprintf(sid, sizeof(sid), "%s", out.headers[0].value);
        CHECK_EQ_INT(strlen(sid), 32);
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "result");
        CHECK_STREQ(cJSON_GetObjectItemCaseSensitive(r, "protocolVersion")->valuestring,
                    "2025-03-26");
        answer_done(o, &out);

        /* without the session: 400 -32600; with an unknown one: 404 */
        o = post(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", 400, &out);
        answer_done(o, &out);
        fake.session = "0123456789abcdef0123456789abcdef";
        o = post(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", 404, &out);
        CHECK_STREQ(error_code(o)->valuestring, "not_found");
        answer_done(o, &out);

        fake.session = sid;
        o = post(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", 200, &out);
        CHECK(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o, "result")));
        answer_done(o, &out);
        o = post(m, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 202, &out);
        answer_done(o, &out);
        o = post(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"}", 200, &out);
        CHECK_EQ_INT(error_code(o)->valueint, -32601);
        answer_done(o, &out);

        /* run_shell through the host's native API, created on demand */
        fake.status = 200;
        fake.answer = "{\"result\":{\"stdout\":\"hi\\n\",\"stderr\":\"\",\"exit_code\":3}}";
        o = call_tool(m, 4, "run_shell", "{\"command\":\"echo hi\"}", &out);
        CHECK_EQ_INT(fake.creates, 1);
        CHECK_EQ_INT(fake.last_api, MCP_API_NATIVE);
        CHECK_STREQ(fake.last_path, "POST /exec");
        CHECK(strstr(fake.last_body, "\"cmd\":\"echo hi\"") != NULL);
        CHECK_STREQ(text_of(o), "hi\n\n[exit code 3]");
        answer_done(o, &out);

        /* a refusal from the sandbox: its message, as a tool failure */
        fake.status = 400;
        fake.answer = "{\"error\":{\"code\":\"bad_request\",\"message\":\"no such user\"}}";
        o = call_tool(m, 5, "run_shell", "{\"command\":\"x\"}", &out);
        CHECK_STREQ(text_of(o), "no such user");
        answer_done(o, &out);

        /* run_python on the code interpreter: the NDJSON stream, cut anywhere */
        fake.status = 200;
        fake.answer = "{\"type\":\"stdout\",\"text\":\"a\\n\"}\n{\"type\":\"result\",\"text\":"
                      "\"2\",\"is_main_result\":true}\n{\"type\":\"end_of_execution\"}\n";
        o = call_tool(m, 6, "run_python", "{\"code\":\"1+1\"}", &out);
        CHECK_EQ_INT(fake.last_api, MCP_API_CODE);
        CHECK_STREQ(fake.last_path, "POST /execute");
        CHECK_STREQ(text_of(o), "a\n2\n");
        CHECK_EQ_INT(fake.creates, 1); /* the session's sandbox is kept */
        answer_done(o, &out);

        /* bad arguments are JSON-RPC errors */
        o = call_tool(m, 7, "install_package", "{\"packages\":[\"-e x\"]}", &out);
        CHECK_EQ_INT(error_code(o)->valueint, -32602);
        answer_done(o, &out);

        /* GET: 405 with Allow; DELETE ends the session and kills its sandbox */
        struct mcp_http_request get = {"GET", NULL, 0, f_header, NULL, NULL};
        CHECK_EQ_INT(mcp_handle(m, &get, &out), 0);
        CHECK_EQ_INT(out.status, 405);
        CHECK_STREQ(out.headers[0].name, "Allow");
        mcp_http_response_done(&out);
        struct mcp_http_request del = {"DELETE", NULL, 0, f_header, NULL, NULL};
        CHECK_EQ_INT(mcp_handle(m, &del, &out), 0);
        CHECK_EQ_INT(out.status, 204);
        CHECK_EQ_INT(fake.kills, 1);
        mcp_http_response_done(&out);
        CHECK_EQ_INT(mcp_handle(m, &del, &out), 0);
        CHECK_EQ_INT(out.status, 404);
        mcp_http_response_done(&out);
        mcp_free(m);
}

static void test_rpc_parse(void)
{
        struct mcp_rpc r;
        const char *msg;
        CHECK_EQ_INT(mcp_rpc_parse("{\"id\":1,\"method\":\"ping\"}", 24, &r, &msg), 0);
        CHECK_STREQ(r.method, "ping");
        CHECK(cJSON_IsNumber(r.id));
        mcp_rpc_done(&r);
        CHECK_EQ_INT(mcp_rpc_parse("{\"id\":1,\"result\":{}}", 20, &r, &msg), 0);
        CHECK(r.response && !r.method);
        mcp_rpc_done(&r);
        CHECK_EQ_INT(mcp_rpc_parse("{\"id\":1}", 8, &r, &msg), 0);
        CHECK(!r.response && !r.method);
        mcp_rpc_done(&r);
        CHECK_EQ_INT(mcp_rpc_parse("[{\"method\":\"ping\"}]", 19, &r, &msg), -32600);
        CHECK_EQ_INT(mcp_rpc_parse("{", 1, &r, &msg), -32700);
        CHECK_EQ_INT(mcp_rpc_parse(NULL, 0, &r, &msg), -32700);
        char deep[200];
        memset(deep, '[', 100);
        memset(deep + 100, ']', 100);
        CHECK_EQ_INT(mcp_rpc_parse(deep, 200, &r, &msg), -32700);
        CHECK_STREQ(msg, "JSON nested too deeply");
}

static void test_tools_list(void)
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

/* What a sandbox says when it refuses: only a message survives, cut at 1 KiB. */
static void test_error_message(void)
{
        char msg[1025];
        static const char ours[] = "{\"error\":{\"code\":\"not_found\",\"message\":\"gone\"}}";
        mcp_error_message(ours, strlen(ours), msg);
        CHECK_STREQ(msg, "gone");
        static const char envd[] = "{\"code\":404,\"message\":\"path not found\"}";
        mcp_error_message(envd, strlen(envd), msg);
        CHECK_STREQ(msg, "path not found");
        static const char empty[] = "{\"error\":{\"code\":\"x\",\"message\":\"\"}}";
        mcp_error_message(empty, strlen(empty), msg);
        CHECK_STREQ(msg, "the sandbox refused the request");
        mcp_error_message("not json at all", 15, msg);
        CHECK_STREQ(msg, "the sandbox refused the request");
        mcp_error_message("", 0, msg);
        CHECK_STREQ(msg, "the sandbox refused the request");
        size_t n = 100000;
        char *big = malloc(n + 64);
        strcpy(big, "{\"message\":\"");
        memset(big + 12, 'm', n);
        strcpy(big + 12 + n, "\"}");
        mcp_error_message(big, strlen(big), msg);
        CHECK_EQ_INT((int)strlen(msg), 1024);
        free(big);
}

static void test_ndjson(void)
{
        struct mcp_exec x;
        CHECK_EQ_INT(mcp_exec_init(&x), 0);
        static const char s[] =
            "{\"type\":\"stdout\",\"text\":\"out\"}\n"
            "not json\n"
            "{\"type\":\"stderr\",\"text\":\"err\"}\n"
            "{\"type\":\"result\",\"png\":\"iVBORw0KGgo=\"}\n"
            "{\"type\":\"error\",\"name\":\"ZeroDivisionError\",\"value\":\"division by zero\"}\n"
            "{\"type\":\"stdout\",\"text\":\"never: no newline\"}";
        for (size_t i = 0; i < sizeof(s) - 1; i++) /* byte by byte */
                mcp_exec_feed(&x, s + i, 1);
        CHECK_STREQ(buf_str(&x.out[0]), "out");
        CHECK_STREQ(buf_str(&x.out[1]), "err");
        CHECK_EQ_INT(cJSON_GetArraySize(x.images), 1);
        cJSON *r = mcp_exec_result(&x, NULL, "python", 0, 1000);
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(r, "structuredContent");
        CHECK_STREQ(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sc, "error"), "name")
                ->valuestring,
            "ZeroDivisionError");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(r, "content");
        CHECK_EQ_INT(cJSON_GetArraySize(content), 2); /* the text and the image */
        CHECK(strstr(cJSON_GetArrayItem(content, 0)->child->next->valuestring,
                     "ZeroDivisionError: division by zero") != NULL);
        cJSON_Delete(r);
        mcp_exec_done(&x);

        /* output past MCP_MAX_OUTPUT is counted, not kept; a line past CODE_MAX_LINE skipped */
        CHECK_EQ_INT(mcp_exec_init(&x), 0);
        size_t big = MCP_MAX_OUTPUT + 100;
        char *line = malloc(big + 64);
        int k = snprintf(line, 64, "{\"type\":\"stdout\",\"text\":\"");
        memset(line + k, 'a', big);
        strcpy(line + k + big, "\"}\n");
        mcp_exec_feed(&x, line, strlen(line));
        CHECK_EQ_INT(x.out[0].len, MCP_MAX_OUTPUT);
        CHECK_EQ_INT(x.dropped, 100);
        free(line);
        char *chunk = malloc(1024 * 1024);
        memset(chunk, 'z', 1024 * 1024);
        for (int i = 0; i < 17; i++)
                mcp_exec_feed(&x, chunk, 1024 * 1024);
        mcp_exec_feed(&x, "\n", 1);
        CHECK_EQ_INT(x.results_dropped, 1);
        CHECK(x.line.cap <= CODE_MAX_LINE + 1024 * 1024 * 2); /* never grew past the bound */
        free(chunk);
        mcp_exec_done(&x);
}

/* The host's session prefix (sbxd --cluster: "<node>-") starts the id, which stays usable; a
 * prefix that is not a plain name is not used. */
static void test_session_prefix(void)
{
        struct mcp_host host = {NULL,   f_create,    f_kill, f_state, f_keep_alive,
                                f_open, f_read_head, f_read, f_close};
        struct mcp *m = mcp_new(&host);
        struct mcp_http_response out;
        const char *init = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                           "\"params\":{\"protocolVersion\":\"2025-03-26\"}}";
        const char *prefixes[] = {"node-7-", "bad prefix-"};
        for (size_t i = 0; i < 2; i++) {
                struct mcp_http_request in = {"POST",   init, strlen(init),
                                              f_header, NULL, prefixes[i]};
                fake.session = NULL;
                CHECK_EQ_INT(mcp_handle(m, &in, &out), 0);
                CHECK_EQ_INT(out.status, 200);
                char sid[MCP_SESSION_ID_MAX];
                snprintf(sid, sizeof(sid), "%s", out.headers[0].value);
                mcp_http_response_done(&out);
                CHECK_EQ_INT(strlen(sid), i == 0 ? 39 : 32);
                if (i == 0)
                        CHECK(strncmp(sid, "node-7-", 7) == 0);
                fake.session = sid;
                cJSON_Delete(
                    post(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}", 200, &out));
                mcp_http_response_done(&out);
        }
        fake.session = NULL;
        mcp_free(m);
}

int main(void)
{
        test_rpc_parse();
        test_tools_list();
        test_error_message();
        test_ndjson();
        test_session();
        test_session_prefix();
        return unit_finish("test-mcp");
}
