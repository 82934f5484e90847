/* SPDX-License-Identifier: Apache-2.0 */
#include "front/front.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/errors.h"
#include "core/stats.h"
#include "e2b/files-signature.h"
#include "e2b/proxy.h"
#include "front/routes.h"
#include "core/validate.h"
#include "frame.h"
#include "http/http.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"
#include "json-util.h"
#include "time-util.h"

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
        static unsigned long long counter;
        struct request *req = calloc(1, sizeof(*req));
        if (!req)
                return NULL;
        req->srv = cls;
        __atomic_add_fetch(&req->srv->requests_inflight, 1, __ATOMIC_RELAXED); /* drain */
        req->conn = conn;
        req->t0_ms = now_ms();
        req->target = strdup(uri ? uri : "");
        snprintf(req->rid, sizeof(req->rid), "%llx",
                 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
        return req;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
        struct request *req = *req_cls;
        if (!req)
                return;
        log_info("req=%s %s %s%s%s status=%u %lldms%s", req->rid, req->method ? req->method : "-",
                 req->path ? req->path : "-", req->sandbox_id[0] ? " sandbox=" : "",
                 req->sandbox_id, req->status, (long long)(now_ms() - req->t0_ms),
                 toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
        __atomic_sub_fetch(&req->srv->requests_inflight, 1, __ATOMIC_RELAXED);
        if (req->state_free)
                req->state_free(req->state);
        if (req->body) {
                buf_done(&req->body->raw);
                cJSON_Delete(req->body->json);
                free(req->body);
        }
        free(req->deferred_body);
        free(req->target);
        free(req->method);
        free(req->path);
        free(req);
        *req_cls = NULL;
}

/* A handler's status (http/http.h) as libmicrohttpd's answer. */
static enum MHD_Result result(int r)
{
        return r < 0 ? MHD_NO : MHD_YES;
}

static int too_large(struct request *req, enum route_errors errors, size_t max)
{
        if (errors == ERRORS_NATIVE)
                return v1_reply_error(req, 413, NULL, "request body larger than %zu bytes", max);
        return http_reply_error(req, -EMSGSIZE, NULL, "request body larger than %zu bytes", max);
}

/* No row takes method + path: 404 (the native API: 405 for a path it has under another
 * method, once the caller is known). */
static int no_route(struct request *req, bool path_only)
{
        if (route_errors_for_path(req->path) == ERRORS_E2B)
                return http_reply_error(req, -ENOENT, NULL, "%s %s: no such route", req->method,
                                        req->path);
        if (!path_only)
                return v1_reply_error(req, 404, NULL, "no such route: %s %s", req->method,
                                      req->path);
        if (http_auth_check(req, AUTH_BEARER) < 0)
                return v1_reply_error(req, 401, NULL,
                                      "missing or invalid API key: send Authorization: Bearer "
                                      "<key>");
        return v1_reply_error(req, 405, NULL, "%s not allowed on %s", req->method, req->path);
}

static int refuse_auth(struct request *req, const struct route *rt, int r)
{
        if (rt->errors == ERRORS_NATIVE)
                return v1_reply_error(req, 401, NULL,
                                      "missing or invalid API key: send Authorization: Bearer "
                                      "<key>");
        return http_reply_error(req, -EACCES, NULL,
                                r == -ENOKEY ? "Missing X-API-KEY header" : "Invalid API key");
}

/* First call: classify (a sandbox's traffic goes to the proxy), then the route table: auth
 * and the body's bound before any body byte, then the route's begin. */
static int on_first_call(struct request *req)
{
        struct route_target t;
        route_classify(http_header(req, "E2b-Sandbox-Port"), http_header(req, "E2b-Sandbox-Id"),
                       http_header(req, MHD_HTTP_HEADER_HOST), &t);
        /* A signed /files URL without E2b-Sandbox-* headers: the signature names the sandbox. */
        if (t.kind == ROUTE_CONTROL && files_signature_find(req->srv->registry, req->method,
                                                            req->path, req->target, t.id) == 0) {
                t.kind = ROUTE_PROXY;
                t.port = SBX_PORT_ENVD;
        }
        switch (t.kind) {
        case ROUTE_BAD_PORT:
                return http_reply_error(req, -EINVAL, NULL,
                                        "invalid E2b-Sandbox-Port: want a port 1..65535");
        case ROUTE_PROXY:
                req->proxied = true;
                return proxy_begin(req, &t);
        case ROUTE_CONTROL:
                break;
        }

        bool path_only;
        const struct route *rt =
            route_find(sbxd_routes, sbxd_n_routes, req->method, req->path, &req->args, &path_only);
        if (!rt)
                return no_route(req, path_only);
        req->route = rt;
        int r = http_auth_check(req, rt->auth);
        if (r < 0)
                return refuse_auth(req, rt, r);
        if (rt->body == BODY_JSON || rt->body == BODY_BUFFERED) {
                const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
                if (cl && strtoull(cl, NULL, 10) > rt->max_body)
                        return too_large(req, rt->errors, rt->max_body);
                req->body = calloc(1, sizeof(*req->body));
                if (!req->body)
                        return -ENOMEM;
        }
        return rt->begin ? rt->begin(req) : 0;
}

/* Drop body bytes nobody reads; past HTTP_MAX_DISCARD the connection is cut. */
static int discard(struct request *req, size_t len)
{
        req->discarded += len;
        return req->discarded > HTTP_MAX_DISCARD ? -EMSGSIZE : 0;
}

static int on_upload(struct request *req, const char *data, size_t len)
{
        const struct route *rt = req->route;
        if (req->proxied)
                return proxy_upload(req, data, len);
        if (rt->body == BODY_STREAM)
                return rt->upload(req, data, len);
        if (!req->body)
                return discard(req, len);
        if (req->body->too_large || req->body->raw.len + len > rt->max_body) {
                /* libmicrohttpd 0.9.75 refuses a response queued mid-body: drop the rest and
                 * answer 413 at the end. */
                req->body->too_large = true;
                return discard(req, len);
        }
        return buf_add(&req->body->raw, data, len);
}

static int on_finish(struct request *req)
{
        const struct route *rt = req->route;
        if (req->proxied)
                return proxy_finish(req);
        if (req->body && req->body->too_large)
                return too_large(req, rt->errors, rt->max_body);
        if (rt->body == BODY_JSON) {
                const char *msg = NULL;
                struct buf *b = &req->body->raw;
                int r = json_parse_body(buf_str(b), b->len, &req->body->json, &msg);
                if (r < 0 && rt->errors == ERRORS_NATIVE)
                        return v1_reply_error(req, 400, "bad_request", "%s", msg);
                if (r < 0)
                        return http_reply_error(req, r, NULL, "%s", msg);
        }
        int r = rt->handle(req);
        if (r == 0) { /* a handler that answered nothing: never leave the client waiting */
                log_error("req=%s %s %s: the handler queued no answer", req->rid, req->method,
                          req->path);
                return http_reply_error(req, -EIO, NULL, "internal error");
        }
        return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
        struct request *req = *req_cls;
        if (!req)
                return MHD_NO; /* ENOMEM in on_uri */
        if (!req->started) {
                req->started = true;
                req->method = strdup(method);
                req->path = strdup(url);
                if (!req->method || !req->path)
                        return MHD_NO;
                req->in_first_call = true;
                int r = on_first_call(req);
                req->in_first_call = false;
                return result(r);
        }
        if (req->status != 0) {
                /* Answered on the first call: drop the body (bounded), then answer. */
                if (*upload_data_size > 0) {
                        size_t n = *upload_data_size;
                        *upload_data_size = 0;
                        return result(discard(req, n));
                }
                if (!req->deferred_body)
                        return MHD_YES;
                _cleanup_free_ char *body = TAKE_PTR(req->deferred_body);
                return result(http_reply_json(req, req->status, body));
        }
        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                return result(on_upload(req, upload_data, n));
        }
        return result(on_finish(req));
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
        char msg[512];
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(msg, sizeof(msg), fmt, ap);
#pragma GCC diagnostic pop
        size_t l = strlen(msg);
        while (l > 0 && msg[l - 1] == '\n')
                msg[--l] = 0;
        log_debug("microhttpd: %s", msg);
}

int http_start(struct server *srv, struct MHD_Daemon **ret, uint16_t *ret_port)
{
        const struct sbxd_config *c = srv->config;
        unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                         MHD_USE_ERROR_LOG | MHD_USE_POLL |
                         MHD_ALLOW_UPGRADE; /* WebSocket terminal (native/ws-terminal.h) */
        if (c->addr.ss_family == AF_INET6)
                flags |= MHD_USE_IPv6;

        /* The logger first, so MHD's own start-up messages go through it too. */
        struct MHD_OptionItem opts[] = {
            {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, srv},
            {MHD_OPTION_SOCK_ADDR, 0, (void *)&c->addr},
            {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, srv},
            {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, srv},
            {MHD_OPTION_CONNECTION_LIMIT, HTTP_MAX_CONNECTIONS, NULL},
            {MHD_OPTION_PER_IP_CONNECTION_LIMIT, HTTP_MAX_CONNECTIONS_PER_IP, NULL},
            {MHD_OPTION_CONNECTION_TIMEOUT, HTTP_IDLE_TIMEOUT_S, NULL},
            {MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONN_MEMORY, NULL},
            {MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL},
            /* --tls-cert/--tls-key: HTTPS on the same listener (GnuTLS inside MHD) */
            {c->tls_cert_pem ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, c->tls_cert_pem},
            {MHD_OPTION_HTTPS_MEM_KEY, 0, c->tls_key_pem},
            {MHD_OPTION_END, 0, NULL},
        };
        if (c->tls_cert_pem)
                flags |= MHD_USE_TLS;
        struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv,
                                                MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
        if (!d)
                return -EADDRNOTAVAIL;
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        if (!info || info->port == 0) {
                MHD_stop_daemon(d);
                return -EADDRNOTAVAIL;
        }
        *ret_port = info->port;
        *ret = d;
        return 0;
}
