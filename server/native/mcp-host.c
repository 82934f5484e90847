/* SPDX-License-Identifier: Apache-2.0 */
#include "native/mcp-host.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/cluster-hooks.h"
#include "channel/agent-req.h"
#include "core/validate.h"
#include "frame.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "mcp/mcp.h"
#include "native/v1.h"

#define MCP_SSE_BLOCK (16 * 1024)

/* ---- the host MCP calls ---- */

static int host_create(void *ctx, const char *template_id, int timeout_s,
                       char id[static MCP_SANDBOX_ID_MAX], char *err, size_t err_size)
{
        struct server *srv = ctx;
        /* --cluster: the session's sandbox is made on the session's node, never placed: a
         * drained node refuses it (server/cluster/README.md) */
        const struct cluster_hooks *h = srv->cluster_hooks;
        int r = h ? h->may_create(srv, err, err_size) : 0;
        if (r < 0)
                return r;
        struct create_params p = {.timeout_s = timeout_s, .net.internet = -1};
        _cleanup_sandbox_ struct sandbox *s = NULL;
        snprintf(p.template_id, sizeof(p.template_id), "%s", template_id);
        r = lifecycle_create(ctx, &p, &s, err, err_size);
        if (r < 0)
                return r;
        snprintf(id, MCP_SANDBOX_ID_MAX, "%s", s->id);
        return 0;
}

static int host_kill(void *ctx, const char *id)
{
        return lifecycle_kill(ctx, id);
}

static int host_state(void *ctx, const char *id)
{
        struct server *srv = ctx;
        _cleanup_sandbox_ struct sandbox *s =
            sandbox_id_valid(id) ? registry_get(srv->registry, id) : NULL;
        if (!s)
                return -ENOENT;
        return sandbox_is_paused(s) ? 1 : 0;
}

static int host_keep_alive(void *ctx, const char *id, int seconds)
{
        struct server *srv = ctx;
        _cleanup_sandbox_ struct sandbox *s =
            sandbox_id_valid(id) ? registry_get(srv->registry, id) : NULL;
        if (!s)
                return -ENOENT;
        registry_set_end_at(srv->registry, s, (int64_t)time(NULL) + seconds, false);
        return 0;
}

struct mcp_stream {
        struct agent_req *q;
};

static int host_open(void *ctx, const char *id, enum mcp_api api, const char *method,
                     const char *path, const char *query, const char *content_type,
                     const void *body, size_t len, int timeout_ms, struct mcp_stream **ret)
{
        struct server *srv = ctx;
        char agent_path[512];
        uint16_t port = SBX_PORT_CODE;
        if (api == MCP_API_NATIVE) { /* as the /v1 relay sends /v1/sandboxes/{id}<path> */
                port = SBX_PORT_INTERNAL;
                if ((size_t)snprintf(agent_path, sizeof(agent_path), "/v1%s", path) >=
                    sizeof(agent_path))
                        return -ENAMETOOLONG;
                path = agent_path;
        }
        _cleanup_sandbox_ struct sandbox *s =
            sandbox_id_valid(id) ? registry_get(srv->registry, id) : NULL;
        if (!s)
                return -ENOENT;
        struct mcp_stream *st = calloc(1, sizeof(*st));
        if (!st)
                return -ENOMEM;
        struct agent_head h;
        struct agent_req_opts o = {.timeout_ms = timeout_ms};
        agent_head_init(&h, port, method, path, query, content_type);
        int r = agent_req_open(s->dir, &h.h, &o, &st->q);
        if (r >= 0) {
                r = agent_req_send(st->q, body, len);
                if (r >= 0 || r == -ECANCELED) /* answered early: read that answer */
                        r = agent_req_end(st->q);
                if (r == -ECANCELED)
                        r = 0;
        }
        if (r < 0) {
                agent_req_free(st->q);
                free(st);
                return r;
        }
        *ret = st;
        return 0;
}

static int host_read_head(struct mcp_stream *st, const atomic_bool *cancel, int64_t deadline_ms,
                          char *ctype, size_t ctype_size)
{
        struct sbx_resp_head h = {};
        agent_req_watch_cancel(st->q, cancel, deadline_ms);
        int r = agent_req_read_head(st->q, &h);
        if (r < 0)
                return r;
        const char *ct = sbx_header_get(h.headers, h.n_headers, "Content-Type");
        snprintf(ctype, ctype_size, "%s", ct ? ct : "");
        r = h.status;
        sbx_resp_head_free(&h);
        return r;
}

static int host_read(struct mcp_stream *st, const atomic_bool *cancel, int64_t deadline_ms,
                     const void **data, size_t *len)
{
        const uint8_t *d;
        uint32_t n;
        agent_req_watch_cancel(st->q, cancel, deadline_ms);
        int r = agent_req_next(st->q, &d, &n);
        if (r > 0) {
                *data = d;
                *len = n;
        }
        return r;
}

static void host_close(struct mcp_stream *st)
{
        if (!st)
                return;
        agent_req_free(st->q);
        free(st);
}

/* ---- the route ---- */

static struct mcp *the_mcp;
static pthread_once_t mcp_once = PTHREAD_ONCE_INIT;
static struct server *mcp_srv;

static void mcp_init(void)
{
        struct mcp_host host = {
            .ctx = mcp_srv,
            .create = host_create,
            .kill = host_kill,
            .state = host_state,
            .keep_alive = host_keep_alive,
            .open = host_open,
            .read_head = host_read_head,
            .read = host_read,
            .close = host_close,
        };
        the_mcp = mcp_new(&host);
}

static const char *header(void *ctx, const char *name)
{
        return http_header(ctx, name);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
        ssize_t n = mcp_sse_read(cls, buf, max);
        if (n < 0)
                return MHD_CONTENT_READER_END_WITH_ERROR;
        return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void sse_free(void *cls)
{
        mcp_sse_free(cls);
}

int mcp_host_handle(struct request *req)
{
        mcp_srv = req->srv; /* one server per process */
        pthread_once(&mcp_once, mcp_init);
        if (!the_mcp)
                return v1_reply_error(req, 503, "unavailable", "MCP could not start");
        /* --cluster: a session's id starts with this node's name, so that any node forwards
         * the session's later requests here (cluster/cluster-http.c) */
        char prefix[MCP_SESSION_PREFIX_MAX + 1] = "";
        if (__atomic_load_n(&req->srv->cluster, __ATOMIC_ACQUIRE) && req->srv->cluster_hooks)
                snprintf(prefix, sizeof(prefix), "%s-", req->srv->cluster_hooks->node_name);
        struct mcp_http_request in = {
            .method = req->method,
            .body = req->body->raw.p,
            .len = req->body->raw.len,
            .header = header,
            .ctx = req,
            .session_prefix = prefix[0] ? prefix : NULL,
        };
        struct mcp_http_response out;
        int r = mcp_handle(the_mcp, &in, &out);
        if (r < 0)
                return r;
        struct MHD_Response *resp;
        if (out.sse) {
                resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, MCP_SSE_BLOCK, sse_read,
                                                         out.sse, sse_free);
                if (!resp)
                        mcp_sse_free(out.sse);
        } else {
                resp = MHD_create_response_from_buffer(out.len, out.body, MHD_RESPMEM_MUST_FREE);
                if (resp)
                        out.body = NULL;
        }
        if (!resp) {
                mcp_http_response_done(&out);
                return -ENOMEM;
        }
        if (out.content_type)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, out.content_type);
        for (size_t i = 0; i < out.n_headers; i++)
                MHD_add_response_header(resp, out.headers[i].name, out.headers[i].value);
        r = http_queue(req, out.status, resp);
        MHD_destroy_response(resp);
        mcp_http_response_done(&out);
        return r;
}
