/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/proxy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "channel/agent-mhd.h"
#include "channel/agent-req.h"
#include "core/keys.h"
#include "core/query.h"
#include "core/validate.h"
#include "e2b/files-signature.h"
#include "frame.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"

/* A proxied request's state (req->state). */
struct proxy_conn {
        struct agent_req *q;
        uint16_t port;
};

static void proxy_conn_free(void *p)
{
        struct proxy_conn *c = p;
        if (!c)
                return;
        agent_req_free(c->q);
        free(c);
}

struct header_collect {
        struct sbx_header h[SBX_HEAD_MAX_HEADERS];
        size_t n;
        bool overflow;
};

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      const char *value)
{
        struct header_collect *c = cls;
        if (!key || http_hop_by_hop(key))
                return MHD_YES;
        if (c->n >= SBX_HEAD_MAX_HEADERS) {
                c->overflow = true;
                return MHD_NO;
        }
        c->h[c->n++] = (struct sbx_header){key, value ? value : ""};
        return MHD_YES;
}

/* Refusals before the agent is asked; 0 to go on. */
static int check(struct request *req, const struct route_target *t, struct sandbox *s)
{
        const char *id = t->id;
        /* frozen: its agent would never answer. E2B's proxy answers a paused sandbox the same
         * way (the SDKs then call connect to resume it). */
        if (sandbox_is_paused(s) && lifecycle_auto_resume(req->srv, s) <= 0)
                return http_reply_error(req, -EHOSTUNREACH, id, "The sandbox is paused");
        if (route_proxy_forbidden(t->port, req->path))
                return http_reply_error(req, -ENOENT, NULL, "%s: not found", req->path);
        if (route_proxy_needs_token(t->port, req->method, req->path) &&
            !const_time_streq(http_header(req, "X-Access-Token"), s->token) &&
            !(t->port == SBX_PORT_ENVD &&
              files_signature_ok_target(req->method, req->path, req->target,
                                        http_header(req, "X-Access-Token"), s->token, time(NULL))))
                return http_reply_error(req, -EACCES, NULL,
                                        "unauthorized access, please provide a valid access "
                                        "token or method signing if supported");
        return 0;
}

int proxy_begin(struct request *req, const struct route_target *t)
{
        const char *id = t->id;
        snprintf(req->sandbox_id, sizeof(req->sandbox_id), "%s", id);
        _cleanup_sandbox_ struct sandbox *s =
            sandbox_id_valid(id) ? registry_get(req->srv->registry, id) : NULL;
        if (!s)
                return http_reply_error(req, -EHOSTUNREACH, id, "The sandbox was not found");
        int r = check(req, t, s);
        if (r != 0)
                return r;

        struct header_collect hc = {};
        MHD_get_connection_values(req->conn, MHD_HEADER_KIND, collect_header, &hc);
        if (hc.overflow)
                return http_reply_error(req, -EINVAL, NULL, "too many request headers");
        _cleanup_free_ char *query = NULL;
        if (query_from_target(req->target, &query) < 0)
                return -ENOMEM;
        struct sbx_req_head h = {
            .port = t->port,
            .method = req->method,
            .path = req->path,
            .query = query,
            .n_headers = hc.n,
            .headers = hc.h,
        };
        struct proxy_conn *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->port = t->port;
        req->state = c;
        req->state_free = proxy_conn_free;

        struct agent_req_opts o = {.timeout_ms = PROXY_SEND_TIMEOUT_MS, .count_bytes = true};
        r = agent_req_open(s->dir, &h, &o, &c->q);
        if (r == -EINVAL)
                return http_reply_error(req, -EINVAL, NULL, "request head too large");
        if (r < 0) {
                log_warning_errno(r, "req=%s sandbox %s: agent connect: %m", req->rid, id);
                return http_reply_error(req, -EHOSTUNREACH, id, "The sandbox is not reachable");
        }
        agent_req_watch_client(c->q, http_client_fd(req));
        return 0;
}

int proxy_upload(struct request *req, const char *data, size_t len)
{
        struct proxy_conn *c = req->state;
        /* The agent may answer before reading everything (api/frames.md): once its answer is
         * waiting, the rest is dropped instead of blocking on a full socket. */
        if (c && !agent_req_send_stopped(c->q)) {
                int r = agent_req_send(c->q, data, len);
                if (r < 0 && r != -ECANCELED)
                        log_debug("req=%s: agent stopped reading the body: %s", req->rid,
                                  strerror(-r));
        }
        return 0;
}

int proxy_finish(struct request *req)
{
        struct proxy_conn *c = req->state;
        if (!c)
                return -EINVAL;
        (void)agent_req_end(c->q);
        struct sbx_resp_head h = {};
        int r = agent_req_read_head(c->q, &h);
        if (r < 0) {
                if (r == -ECONNABORTED)
                        return r;
                log_warning_errno(r, "req=%s sandbox %s: no response head from the agent: %m",
                                  req->rid, req->sandbox_id);
                return http_reply_error(req, -EPROTO, req->sandbox_id,
                                        "The sandbox closed the connection");
        }
        if (h.status < 200) {
                /* 1xx (101 Switching Protocols...) would need an upgrade path: never proxied */
                sbx_resp_head_free(&h);
                return http_reply_error(req, -EPROTO, req->sandbox_id,
                                        "invalid response status from the sandbox");
        }
        r = agent_mhd_respond(req, &c->q, &h, 0);
        sbx_resp_head_free(&h);
        if (r == -EPROTO)
                return http_reply_error(req, -EPROTO, req->sandbox_id,
                                        "invalid response from the sandbox");
        return r;
}
