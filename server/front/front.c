/* SPDX-License-Identifier: Apache-2.0 */
#include "front/front.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cluster/cluster-http.h"
#include "cluster/forward.h"
#include "core/errors.h"
#include "core/stats.h"
#include "e2b/files-signature.h"
#include "e2b/proxy.h"
#include "front/routes.h"
#include "core/validate.h"
#include "frame.h"
#include "front/gate.h"
#include "http/framing.h"
#include "http/http.h"
#include "http/upgrade.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"
#include "json-util.h"
#include "time-util.h"

struct front {
        struct MHD_Daemon *mhd;
        struct gate *gate;
};

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
        static unsigned long long counter;
        gate_conn_set(gate_conn_of(conn), GATE_HEAD);
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
        /* after a 101 the connection is an upgraded relay's (channel/agent-upgrade.h,
         * native/ws-terminal.c) until it closes: never idle */
        gate_conn_set(gate_conn_of(conn), req && req->status == MHD_HTTP_SWITCHING_PROTOCOLS
                                              ? GATE_UPGRADED
                                              : GATE_IDLE);
        if (!req)
                return;
        log_context_set(req->rid, req->sandbox_id);
        log_info("req=%s %s %s%s%s status=%u %lldms%s", req->rid, req->method ? req->method : "-",
                 req->path ? req->path : "-", req->sandbox_id[0] ? " sandbox=" : "",
                 req->sandbox_id, req->status, (long long)(now_ms() - req->t0_ms),
                 toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
        log_context_set(NULL, NULL); /* the connection's thread may serve another request */
        __atomic_sub_fetch(&req->srv->requests_inflight, 1, __ATOMIC_RELAXED);
        http_upgrade_request_end(req); /* a 101 the client left before it was sent */
        if (req->state_free)
                req->state_free(req->state);
        if (req->body) {
                buf_done(&req->body->raw);
                cJSON_Delete(req->body->json);
                free(req->body);
        }
        http_deferred_free(req);
        free(req->target);
        free(req->method);
        free(req->path);
        free(req);
        *req_cls = NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION (cls: the gate). A closed connection is freed once this
 * returns: not while its upgraded exchange still calls libmicrohttpd (http/upgrade.h). */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
        if (toe == MHD_CONNECTION_NOTIFY_CLOSED)
                http_upgrade_closing(conn);
        gate_notify_connection(cls, conn, socket_context, toe);
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

static enum MHD_Result framing_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                      size_t key_size, const char *value, size_t value_size)
{
        http_framing_header(cls, key, key_size, value ? value : "", value ? value_size : 0);
        return MHD_YES;
}

/* The framing rules (http/framing.h) on a request libmicrohttpd read itself (the gate checked
 * the connection's first head): 400/501, and the connection closes. */
static int check_framing(struct request *req)
{
        struct http_framing f = {};
        MHD_get_connection_values_n(req->conn, MHD_HEADER_KIND, framing_header, &f);
        unsigned st = http_framing_verdict(&f);
        if (st == 0)
                return 0;
        char body[256];
        snprintf(body, sizeof(body), "{\"code\":%u,\"message\":\"%s\"}", st, f.message);
        /* at once, not after the body (http_reply_json would wait): its length is unknown */
        return http_reply_bytes(req, st, "application/json", body, strlen(body),
                                MHD_HTTP_HEADER_CONNECTION, "close");
}

/* Whether the request announced a body (what the gate then watches). */
static bool has_body(struct request *req)
{
        const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
        return http_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
               (cl && strtoull(cl, NULL, 10) > 0);
}

/* A route about one sandbox ("/sandboxes/{id}...", "/v1/sandboxes/{id}..."): its id for the
 * access log and the log lines of the request (SANDBOX_ID in the journal). */
static void note_sandbox(struct request *req, const struct route *rt)
{
        static const char *const prefixes[] = {"/sandboxes/{id}", "/v2/sandboxes/{id}",
                                               "/v1/sandboxes/{id}"};
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (strncmp(rt->pattern, prefixes[i], strlen(prefixes[i])) == 0) {
                        snprintf(req->sandbox_id, sizeof(req->sandbox_id), "%s", req->args.v[0]);
                        log_context_set_sandbox(req->sandbox_id);
                        return;
                }
}

/* A row only another node may call, without --cluster: there is no other node. */
static int no_cluster(struct request *req)
{
        return v1_reply_error(req, 404, "not_found", "this sbxd runs without --cluster");
}

/* First call: the framing, classify (a sandbox's traffic goes to the proxy), then the route
 * table: auth and the body's bound before any body byte, where the row's place says the request
 * is answered (--cluster), then the route's begin. */
static int on_first_call(struct request *req)
{
        int fr = check_framing(req);
        if (fr != 0)
                return fr;
        int cr;
        if (req->srv->cluster && cluster_hop(req, &cr))
                return cr; /* a hop header that does not verify */
        struct route_target t;
        route_classify(http_header(req, "E2b-Sandbox-Port"), http_header(req, "E2b-Sandbox-Id"),
                       http_header(req, MHD_HTTP_HEADER_HOST), &t);
        /* A signed /files URL without E2b-Sandbox-* headers: the signature names the sandbox. */
        if (t.kind == ROUTE_CONTROL && files_signature_find(req->srv->registry, req->method,
                                                            req->path, req->target, t.id) == 0) {
                t.kind = ROUTE_PROXY;
                t.port = SBX_PORT_ENVD;
        }
        /* whatever port it names, a sandbox's traffic goes where the sandbox lives */
        if (req->srv->cluster && t.kind != ROUTE_CONTROL && cluster_forward_sandbox(req, t.id, &cr))
                return cr;
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
        note_sandbox(req, rt);
        int r = http_auth_check(req, rt->auth);
        if (r < 0)
                return refuse_auth(req, rt, r);
        if (req->srv->cluster && cluster_route(req, rt, &cr))
                return cr; /* answered by another node, or by all of them */
        if (!req->srv->cluster && rt->place == PLACE_NODE_ONLY)
                return no_cluster(req);
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
        if (req->forwarded)
                return forward_upload(req, data, len);
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
        if (req->forwarded)
                return forward_finish(req);
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
        if (req->srv->cluster) { /* --cluster: a PLACE_CREATE* row may go to another node */
                int cr = cluster_place_create(req);
                if (cr != 0)
                        return cr;
        }
        int r = rt->handle(req);
        if (r == 0) { /* a handler that answered nothing: never leave the client waiting */
                log_error("req=%s %s %s: the handler queued no answer", req->rid, req->method,
                          req->path);
                return http_reply_error(req, -EIO, NULL, "internal error");
        }
        return r;
}

static enum MHD_Result handle(struct request *req, const char *method, const char *url,
                              const char *upload_data, size_t *upload_data_size)
{
        log_context_set(req->rid, req->sandbox_id); /* this thread serves this request now */
        if (!req->started) {
                req->started = true;
                req->method = strdup(method);
                req->path = strdup(url);
                if (!req->method || !req->path)
                        return MHD_NO;
                req->in_first_call = true;
                int r = on_first_call(req);
                req->in_first_call = false;
                log_context_set_sandbox(req->sandbox_id); /* a proxied request's, now known */
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
                return result(http_reply_deferred(req));
        }
        if (*upload_data_size > 0) {
                size_t n = *upload_data_size;
                *upload_data_size = 0;
                return result(on_upload(req, upload_data, n));
        }
        return result(on_finish(req));
}

/* Every call, timed for the gate (front/gate.h): the time inside is sbxd's, the time between
 * calls of a body is the client's. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
        struct request *req = *req_cls;
        if (!req)
                return MHD_NO; /* ENOMEM in on_uri */
        struct gate_conn *gc = gate_conn_of(conn);
        bool first = !req->started;
        size_t n = *upload_data_size;
        gate_conn_enter(gc);
        enum MHD_Result r = handle(req, method, url, upload_data, upload_data_size);
        /* what comes next: the body (unless answered at once), or the answer */
        enum gate_state next = GATE_RESPONSE;
        if ((first && has_body(req) && (!req->status || req->deferred_body)) || n > 0)
                next = GATE_BODY;
        gate_conn_leave(gc, n, next);
        return r;
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

int front_start(struct server *srv, struct front **ret, uint16_t *ret_port)
{
        const struct sbxd_config *c = srv->config;
        _cleanup_free_ struct front *f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        int r = gate_new(&c->addr, &c->addr_len, 1, c->max_connections, &f->gate, ret_port);
        if (r < 0)
                return r;
        /* No listening socket: the gate accepts and hands over each connection once its
         * head is in (front/gate.h). A thread per connection in MHD, for requests only. */
        unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                         MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_USE_ERROR_LOG | MHD_USE_POLL |
                         MHD_ALLOW_UPGRADE; /* WebSocket terminal (native/ws-terminal.h) */

        /* The logger first, so MHD's own start-up messages go through it too. */
        struct MHD_OptionItem opts[] = {
            {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, srv},
            {MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_uri, srv},
            {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, srv},
            {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, f->gate},
            {MHD_OPTION_CONNECTION_LIMIT, gate_mhd_connection_limit(f->gate), NULL},
            {MHD_OPTION_CONNECTION_TIMEOUT, HTTP_STALL_TIMEOUT_S, NULL},
            {MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_CONN_MEMORY, NULL},
            {MHD_OPTION_THREAD_STACK_SIZE, HTTP_THREAD_STACK, NULL},
            /* --tls-cert/--tls-key: HTTPS on the same listener (GnuTLS inside MHD) */
            {c->tls_cert_pem ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, c->tls_cert_pem},
            {MHD_OPTION_HTTPS_MEM_KEY, 0, c->tls_key_pem},
            {MHD_OPTION_END, 0, NULL},
        };
        if (c->tls_cert_pem)
                flags |= MHD_USE_TLS;
        f->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_ARRAY, opts,
                                  MHD_OPTION_END);
        if (!f->mhd) {
                gate_free(f->gate);
                return -EADDRNOTAVAIL;
        }
        if (c->tls_cert_pem)
                gate_set_opaque(f->gate);
        r = gate_start(f->gate, f->mhd);
        if (r < 0) {
                front_stop(TAKE_PTR(f));
                return r;
        }
        *ret = TAKE_PTR(f);
        return 0;
}

void front_quiesce(struct front *f)
{
        if (f)
                gate_quiesce(f->gate);
}

void front_stop(struct front *f)
{
        if (!f)
                return;
        gate_quiesce(f->gate); /* no new connection while MHD closes the others */
        if (f->mhd) {
                http_upgrade_stop(); /* MHD frees the handles of upgraded connections */
                MHD_stop_daemon(f->mhd);
        }
        gate_free(f->gate);
        free(f);
}
