/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer harness for MCP's JSON-RPC handling (mcp/mcp-rpc.c and what mcp_handle() does with
 * a parsed message: sessions, methods, tool arguments), with a host that has no sandboxes, so a
 * tool call ends in a tool failure without I/O. Every answer must be JSON. Build with clang
 * -fsanitize=fuzzer; the normal suite replays tests/fuzz/corpus/mcp-rpc through fuzz-replay. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int no_create(void *ctx, const char *t, int timeout_s, char id[static MCP_SANDBOX_ID_MAX],
                     char *err, size_t n)
{
        snprintf(err, n, "the fuzzer has no sandboxes");
        return -EAGAIN;
}

static int no_kill(void *ctx, const char *id)
{
        return -ENOENT;
}

static int no_state(void *ctx, const char *id)
{
        return -ENOENT;
}

static int no_keep_alive(void *ctx, const char *id, int s)
{
        return -ENOENT;
}

static int no_open(void *ctx, const char *id, enum mcp_api api, const char *method,
                   const char *path, const char *query, const char *ct, const void *body,
                   size_t len, int timeout_ms, struct mcp_stream **ret)
{
        return -ENOENT;
}

static char session[MCP_SESSION_ID_MAX];

static const char *header(void *ctx, const char *name)
{
        return strcasecmp(name, "Mcp-Session-Id") == 0 ? session : NULL;
}

static struct mcp *server(void)
{
        static struct mcp *m;
        if (m)
                return m;
        struct mcp_host host = {.create = no_create,
                                .kill = no_kill,
                                .state = no_state,
                                .keep_alive = no_keep_alive,
                                .open = no_open};
        m = mcp_new(&host);
        static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"}";
        struct mcp_http_request in = {"POST", init, sizeof(init) - 1, header, NULL, NULL};
        struct mcp_http_response out;
        if (!m || mcp_handle(m, &in, &out) < 0 || out.n_headers != 1)
                abort();
        snprintf(session, sizeof(session), "%s", out.headers[0].value);
        mcp_http_response_done(&out);
        return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct mcp_rpc r;
        const char *msg = NULL;
        int code = mcp_rpc_parse((const char *)data, size, &r, &msg);
        if (code == 0) {
                if (!cJSON_IsObject(r.msg) || (r.method && r.response))
                        abort();
                mcp_rpc_done(&r);
        } else if ((code != -32700 && code != -32600) || !msg) {
                abort();
        }

        struct mcp_http_request in = {"POST", (const char *)data, size, header, NULL, NULL};
        struct mcp_http_response out;
        if (mcp_handle(server(), &in, &out) < 0)
                return 0; /* out of memory */
        if (out.sse)
                abort(); /* no Accept: text/event-stream was sent */
        if (out.body) {
                cJSON *o = cJSON_ParseWithLength(out.body, out.len);
                if (!cJSON_IsObject(o))
                        abort();
                cJSON_Delete(o);
        } else if (out.status != 204) {
                abort();
        }
        mcp_http_response_done(&out);
        return 0;
}
