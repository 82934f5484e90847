/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/proxy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "channel/agent-client.h"
#include "e2b/files-signature.h"
#include "frame.h"
#include "core/keys.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "core/stats.h"
#include "core/query.h"
#include "channel/relay.h"
#include "core/validate.h"

static volatile int shutting_down;

void proxy_shutdown(void)
{
        __atomic_store_n(&shutting_down, 1, __ATOMIC_RELAXED);
}

struct proxy_conn {
        int fd;        /* agent connection; moved into the stream for the response */
        int client_fd; /* the HTTP client's socket, polled for hangup only */
        bool upload_failed;
        char id[ROUTE_ID_MAX];
};

void proxy_free(struct proxy_conn *p)
{
        if (!p)
                return;
        safe_close(p->fd);
        free(p);
}

bool proxy_hop_by_hop(const char *name)
{
        static const char *const hop[] = {
            "Connection",
            "Keep-Alive",
            "Transfer-Encoding",
            "Upgrade",
            "TE",
            "Trailer",
            "Proxy-Connection",
            "Proxy-Authorization",
            "Proxy-Authenticate",
            "Expect",
            "E2b-Sandbox-Id",
            "E2b-Sandbox-Port",
        };
        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (strcasecmp(name, hop[i]) == 0)
                        return true;
        return false;
}

/* Wait until the agent fd is readable. -ECONNABORTED when the client went away or sbxd is
 * stopping. */
static int wait_agent(int fd, int client_fd)
{
        return relay_wait_agent(fd, client_fd, &shutting_down);
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
        if (!key || proxy_hop_by_hop(key))
                return MHD_YES;
        if (c->n >= SBX_HEAD_MAX_HEADERS) {
                c->overflow = true;
                return MHD_NO;
        }
        c->h[c->n++] = (struct sbx_header){key, value ? value : ""};
        return MHD_YES;
}

static enum MHD_Result send_head(struct request *req, struct proxy_conn *p)
{
        struct header_collect hc = {};
        MHD_get_connection_values(req->conn, MHD_HEADER_KIND, collect_header, &hc);
        if (hc.overflow)
                return http_reply_error(req, -EINVAL, NULL, "too many request headers");
        _cleanup_free_ char *query = NULL;
        if (query_from_target(req->target, &query) < 0)
                return MHD_NO;
        struct sbx_req_head h = {
            .port = req->route.port,
            .method = req->method,
            .path = req->path,
            .query = query,
            .n_headers = hc.n,
            .headers = hc.h,
        };
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        int r = sbx_req_head_encode(&h, &buf, &len);
        if (r < 0)
                return http_reply_error(req, -EINVAL, NULL, "request head too large");
        r = sbx_frame_write(p->fd, SBX_FRAME_REQ_HEAD, buf, len);
        if (r < 0)
                return http_reply_error(req, -EHOSTUNREACH, p->id, "The sandbox is not reachable");
        return MHD_YES;
}

enum MHD_Result proxy_begin(struct request *req)
{
        const char *id = req->route.id;
        _cleanup_sandbox_ struct sandbox *s =
            sandbox_id_valid(id) ? registry_get(req->srv->registry, id) : NULL;
        if (!s)
                return http_reply_error(req, -EHOSTUNREACH, id, "The sandbox was not found");
        /* frozen: its agent would never answer. E2B's proxy answers a paused sandbox the same
         * way (the SDKs then call connect to resume it). */
        if (sandbox_is_paused(s) && lifecycle_auto_resume(req->srv, s) <= 0)
                return http_reply_error(req, -EHOSTUNREACH, id, "The sandbox is paused");
        if (route_proxy_forbidden(req->route.port, req->path))
                return http_reply_error(req, -ENOENT, NULL, "%s: not found", req->path);
        if (route_proxy_needs_token(req->route.port, req->method, req->path) &&
            !const_time_streq(http_header(req, "X-Access-Token"), s->token) &&
            !(req->route.port == SBX_PORT_ENVD &&
              files_signature_ok_target(req->method, req->path, req->target,
                                        http_header(req, "X-Access-Token"), s->token, time(NULL))))
                return http_reply_error(req, -EACCES, NULL,
                                        "unauthorized access, please provide a valid access "
                                        "token or method signing if supported");

        struct proxy_conn *p = calloc(1, sizeof(*p));
        if (!p)
                return MHD_NO;
        p->fd = -EBADF;
        snprintf(p->id, sizeof(p->id), "%s", id);
        req->proxy = p;
        p->client_fd = relay_client_fd(req->conn);

        int r = agent_connect(s->dir, &p->fd);
        if (r >= 0)
                r = agent_set_timeouts(p->fd, PROXY_SEND_TIMEOUT_MS);
        if (r < 0) {
                log_warning_errno(r, "req=%s sandbox %s: agent connect: %m", req->rid, id);
                return http_reply_error(req, -EHOSTUNREACH, id, "The sandbox is not reachable");
        }
        return send_head(req, p);
}

enum MHD_Result proxy_upload(struct request *req, const char *data, size_t len)
{
        struct proxy_conn *p = req->proxy;
        if (!p || p->upload_failed)
                return MHD_YES; /* the agent answered early: drop the rest */
        /* The agent may answer before reading everything (api/frames.md): once its response
         * is waiting, stop forwarding instead of blocking on a full socket. */
        int r = relay_upload(p->fd, data, len, PROXY_SEND_TIMEOUT_MS, true);
        if (r < 0) {
                if (r != -ECANCELED)
                        log_debug("req=%s: agent stopped reading the body: %s", req->rid,
                                  strerror(-r));
                p->upload_failed = true;
        }
        return MHD_YES;
}

/* Read the rest of a body that must be empty (204/304/HEAD): bounded drain until END. */
static int drain(int fd, int client_fd, uint8_t *buf)
{
        for (int i = 0; i < 64; i++) {
                uint32_t len;
                int r = wait_agent(fd, client_fd);
                if (r >= 0)
                        r = sbx_frame_read_body(fd, buf, &len);
                if (r <= 0)
                        return r;
        }
        return -EPROTO;
}

static int add_headers(struct MHD_Response *resp, const struct sbx_resp_head *h)
{
        for (size_t i = 0; i < h->n_headers; i++) {
                const char *n = h->headers[i].name, *v = h->headers[i].value;
                /* MHD frames the body and sets Date itself. */
                if (proxy_hop_by_hop(n) || strcasecmp(n, "Content-Length") == 0 ||
                    strcasecmp(n, "Date") == 0)
                        continue;
                if (MHD_add_response_header(resp, n, v) != MHD_YES)
                        return -EPROTO;
        }
        return 0;
}

/* Takes st. */
static enum MHD_Result respond(struct request *req, struct relay_stream *st,
                               const struct sbx_resp_head *h)
{
        bool no_body = h->status == 204 || h->status == 304 || strcmp(req->method, "HEAD") == 0;
        struct MHD_Response *resp;
        uint64_t len;
        int r;

        if (no_body) {
                r = drain(st->fd, st->client_fd, st->buf);
                relay_stream_free(st);
                if (r < 0)
                        return http_reply_error(req, -EPROTO, req->route.id,
                                                "The sandbox closed the connection");
                resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        } else {
                if (relay_content_length(h, &len) < 0) {
                        relay_stream_free(st);
                        return http_reply_error(req, -EPROTO, req->route.id,
                                                "invalid Content-Length from the sandbox");
                }
                st->expected = len;
                resp = MHD_create_response_from_callback(len, PROXY_STREAM_BLOCK, relay_stream_read,
                                                         st, relay_stream_free);
                if (!resp)
                        relay_stream_free(st);
        }
        if (!resp)
                return MHD_NO;
        if (add_headers(resp, h) < 0) {
                MHD_destroy_response(resp);
                return http_reply_error(req, -EPROTO, req->route.id,
                                        "invalid response head from the sandbox");
        }
        req->status = h->status;
        enum MHD_Result ret = MHD_queue_response(req->conn, h->status, resp);
        MHD_destroy_response(resp);
        return ret;
}

enum MHD_Result proxy_finish(struct request *req)
{
        struct proxy_conn *p = req->proxy;
        if (!p)
                return MHD_NO;
        if (!p->upload_failed)
                (void)sbx_frame_write(p->fd, SBX_FRAME_END, NULL, 0);

        struct relay_stream *st;
        if (relay_stream_new(&p->fd, p->client_fd, true, &shutting_down, &st) < 0)
                return MHD_NO;
        struct sbx_resp_head h = {};
        int r = relay_read_head(st, &h);
        if (r < 0) {
                relay_stream_free(st);
                if (r == -ECONNABORTED)
                        return MHD_NO;
                log_warning_errno(r, "req=%s sandbox %s: no response head from the agent: %m",
                                  req->rid, req->route.id);
                return http_reply_error(req, -EPROTO, req->route.id,
                                        "The sandbox closed the connection");
        }
        if (h.status < 200) {
                /* 1xx (101 Switching Protocols...) would need an upgrade path: never proxied */
                sbx_resp_head_free(&h);
                relay_stream_free(st);
                return http_reply_error(req, -EPROTO, req->route.id,
                                        "invalid response status from the sandbox");
        }
        enum MHD_Result ret = respond(req, st, &h);
        sbx_resp_head_free(&h);
        return ret;
}
