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
#include "e2b/routes-sandboxes.h"
#include "frame.h"
#include "http/http.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"
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
                 req->path ? req->path : "-", req->route.kind == ROUTE_PROXY ? " sandbox=" : "",
                 req->route.kind == ROUTE_PROXY ? req->route.id : "", req->status,
                 (long long)(now_ms() - req->t0_ms),
                 toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
        __atomic_sub_fetch(&req->srv->requests_inflight, 1, __ATOMIC_RELAXED);
        proxy_free(req->proxy);
        route_v1_free(req->v1);
        buf_done(&req->body);
        free(req->deferred_body);
        free(req->target);
        free(req->method);
        free(req->path);
        free(req);
        *req_cls = NULL;
}

/* First call: route; proxy requests connect to the agent now so the body can stream. */
static enum MHD_Result on_first_call(struct request *req)
{
        route_classify(http_header(req, "E2b-Sandbox-Port"), http_header(req, "E2b-Sandbox-Id"),
                       http_header(req, MHD_HTTP_HEADER_HOST), &req->route);
        /* A signed /files URL without E2b-Sandbox-* headers: the signature names the sandbox. */
        if (req->route.kind == ROUTE_CONTROL &&
            files_signature_find(req->srv->registry, req->method, req->path, req->target,
                                 req->route.id) == 0) {
                req->route.kind = ROUTE_PROXY;
                req->route.port = SBX_PORT_ENVD;
        }
        switch (req->route.kind) {
        case ROUTE_BAD_PORT:
                return http_reply_error(
                    req, -EINVAL, NULL,
                    "invalid E2b-Sandbox-Port: only 49983 and 49999 are served");
        case ROUTE_PROXY:
                return proxy_begin(req);
        case ROUTE_CONTROL:
                break;
        }
        if (route_v1_wants(req->path))
                return route_v1_begin(req); /* native API and MCP (native/v1.h) */
        enum MHD_Result ret = route_sandboxes_begin(req);
        if (ret != MHD_YES || req->status != 0)
                return ret; /* refused: response queued */
        const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > HTTP_MAX_CONTROL_BODY)
                return http_reply_error(req, -EMSGSIZE, NULL, "request body larger than %d bytes",
                                        HTTP_MAX_CONTROL_BODY);
        return MHD_YES;
}

static enum MHD_Result buffer_body(struct request *req, const char *data, size_t len)
{
        if (req->too_large || req->body.len + len > HTTP_MAX_CONTROL_BODY) {
                /* libmicrohttpd 0.9.75 refuses a response queued mid-body: drop the rest and
                 * answer 413 at the end. */
                req->too_large = true;
                req->discarded += len;
                /* Past this, stop reading a client that will get 413 anyway. */
                return req->discarded > HTTP_MAX_DISCARD ? MHD_NO : MHD_YES;
        }
        return buf_add(&req->body, data, len) < 0 ? MHD_NO : MHD_YES;
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
                enum MHD_Result ret = on_first_call(req);
                req->in_first_call = false;
                return ret;
        }
        if (req->status != 0) {
                /* Refused on the first call: drop the body (bounded), then answer. */
                if (*upload_data_size > 0) {
                        req->discarded += *upload_data_size;
                        *upload_data_size = 0;
                        return req->discarded > HTTP_MAX_DISCARD ? MHD_NO : MHD_YES;
                }
                if (!req->deferred_body)
                        return MHD_YES;
                _cleanup_free_ char *body = TAKE_PTR(req->deferred_body);
                return http_reply_json(req, req->status, body);
        }
        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                if (req->route.kind == ROUTE_PROXY)
                        return proxy_upload(req, upload_data, n);
                if (req->v1)
                        return route_v1_upload(req, upload_data, n);
                return buffer_body(req, upload_data, n);
        }
        if (req->route.kind == ROUTE_PROXY)
                return proxy_finish(req);
        if (req->v1)
                return route_v1_finish(req);
        if (req->too_large)
                return http_reply_error(req, -EMSGSIZE, NULL, "request body larger than %d bytes",
                                        HTTP_MAX_CONTROL_BODY);
        return route_sandboxes_handle(req);
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
            {MHD_OPTION_END, 0, NULL},
        };
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
