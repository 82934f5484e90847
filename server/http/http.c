/* SPDX-License-Identifier: Apache-2.0 */
#include "http/http.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/errors.h"
#include "core/keys.h"
#include "format-util.h"
#include "log.h"
#include "macros.h"
#include "core/stats.h"

const char *http_header(struct request *req, const char *name)
{
        return MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, name);
}

int http_public_base(struct request *req, char *buf, size_t size)
{
        const struct sbxd_config *c = req->srv->config;
        if (c->public_url)
                return (size_t)snprintf(buf, size, "%s", c->public_url) < size ? 0 : -ENAMETOOLONG;
        const char *host = http_header(req, "Host");
        if (!host || !*host || strlen(host) > 255 || strpbrk(host, "/\\ \t?#@%"))
                host = "127.0.0.1";
        return (size_t)snprintf(buf, size, "%s://%s", c->tls_cert ? "https" : "http", host) < size
                   ? 0
                   : -ENAMETOOLONG;
}

const char *http_arg(struct request *req, const char *name)
{
        return MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, name);
}

int http_client_fd(struct request *req)
{
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(req->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        return ci ? ci->connect_fd : -1;
}

bool http_hop_by_hop(const char *name)
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

int http_queue(struct request *req, unsigned status, struct MHD_Response *resp)
{
        /* how long an idle keep-alive connection is kept, a second under the gate's
         * GATE_IDLE_MS: clients that read it (Node's http and undici) stop reusing it before */
        if (status != 101 && !MHD_get_response_header(resp, MHD_HTTP_HEADER_CONNECTION))
                MHD_add_response_header(resp, "Keep-Alive", HTTP_KEEPALIVE_HINT);
        if (MHD_queue_response(req->conn, status, resp) != MHD_YES)
                return -EIO;
        req->status = status;
        return (int)status;
}

/* Whether a refusal decided on the first call (before the body) is sent on a later one.
 * libmicrohttpd 0.9.75 closes the connection after any answer queued on the first call (with
 * "Connection: close"): a keep-alive client would pay a new connection (a TLS handshake) for
 * every 401 or 404, and one still sending its body would get a reset instead of the answer.
 * So the answer waits: for the body, read and dropped (HTTP_MAX_DISCARD at most), or, with no
 * body, for the call libmicrohttpd makes right after the first. Not with Expect: 100-continue
 * (the client sends nothing until told: the answer goes now, and the connection with it) nor
 * past HTTP_MAX_DISCARD. */
static bool defer_refusal(struct request *req)
{
        const char *cl = http_header(req, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *te = http_header(req, MHD_HTTP_HEADER_TRANSFER_ENCODING);
        const char *ex = http_header(req, MHD_HTTP_HEADER_EXPECT);
        if (!req->in_first_call || (ex && strcasecmp(ex, "100-continue") == 0))
                return false;
        if (te)
                return true;
        return (cl ? strtoull(cl, NULL, 10) : 0) <= HTTP_MAX_DISCARD;
}

int http_reply_bytes(struct request *req, unsigned status, const char *content_type,
                     const void *body, size_t len, const char *name, const char *value)
{
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return -ENOMEM;
        if (content_type)
                MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
        if (name)
                MHD_add_response_header(resp, name, value);
        int r = http_queue(req, status, resp);
        MHD_destroy_response(resp);
        return r;
}

int http_reply_json_hdr(struct request *req, unsigned status, const char *body, const char *name,
                        const char *value)
{
        if (defer_refusal(req)) {
                http_deferred_free(req);
                req->deferred_body = strdup(body);
                req->deferred_hname = name ? strdup(name) : NULL;
                req->deferred_hvalue = name ? strdup(value) : NULL;
                if (!req->deferred_body ||
                    (name && (!req->deferred_hname || !req->deferred_hvalue)))
                        return -ENOMEM;
                req->status = status;
                return (int)status;
        }
        return http_reply_bytes(req, status, "application/json", body, strlen(body), name, value);
}

int http_reply_deferred(struct request *req)
{
        int r =
            http_reply_bytes(req, req->status, "application/json", req->deferred_body,
                             strlen(req->deferred_body), req->deferred_hname, req->deferred_hvalue);
        http_deferred_free(req);
        return r;
}

void http_deferred_free(struct request *req)
{
        free(req->deferred_body);
        free(req->deferred_hname);
        free(req->deferred_hvalue);
        req->deferred_body = req->deferred_hname = req->deferred_hvalue = NULL;
}

int http_reply_json(struct request *req, unsigned status, const char *body)
{
        return http_reply_json_hdr(req, status, body, NULL, NULL);
}

int http_reply_cjson(struct request *req, unsigned status, const cJSON *o, const char *name,
                     const char *value)
{
        _cleanup_free_ char *text = o ? cJSON_PrintUnformatted(o) : NULL;
        if (!text) /* o itself may be NULL: building it ran out of memory */
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        return http_reply_json_hdr(req, status, text, name, value);
}

int http_reply_204(struct request *req)
{
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (!resp)
                return -ENOMEM;
        int r = http_queue(req, 204, resp);
        MHD_destroy_response(resp);
        return r;
}

int http_reply_error(struct request *req, int r, const char *sandbox_id, const char *fmt, ...)
{
        char msg[1024];
        (void)FORMAT_VARARGS(msg, sizeof(msg), fmt);

        unsigned status;
        _cleanup_free_ char *body = NULL;
        if (api_error_build(r, sandbox_id, msg, &status, &body) < 0)
                return -ENOMEM;
        stats_count_http_error(status);
        /* 502s (unknown sandbox, agent gone) are the client's news, not sbxd's fault. */
        if (status >= 500 && status != 502)
                log_warning("req=%s %s %s → %u: %s", req->rid, req->method ? req->method : "-",
                            req->path ? req->path : "-", status, msg);
        return http_reply_json(req, status, body);
}

/* Authorization: Bearer <key> (the scheme case-insensitive), or NULL. */
static const char *bearer(struct request *req)
{
        const char *a = http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
        if (!a || strncasecmp(a, "Bearer ", 7) != 0)
                return NULL;
        a += 7;
        while (*a == ' ')
                a++;
        return a;
}

int http_auth_check(struct request *req, enum route_auth auth)
{
        const char *key = http_header(req, "X-API-KEY");
        switch (auth) {
        case AUTH_NONE:
                return 0;
        case AUTH_API_KEY:
        case AUTH_API_KEY_BEARER: {
                const char *authz = http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
                if ((!key || !*key) && auth == AUTH_API_KEY_BEARER && authz &&
                    strncmp(authz, "Bearer ", 7) == 0)
                        key = authz + 7; /* Prometheus scrapers send a bearer token */
                if (!key || !*key)
                        return -ENOKEY;
                return keys_check(&req->srv->keys, key) ? 0 : -EKEYREJECTED;
        }
        case AUTH_BEARER:
        case AUTH_BEARER_TOKEN: {
                const char *b = bearer(req), *t = http_arg(req, "token");
                if (b ? keys_check(&req->srv->keys, b) : key && keys_check(&req->srv->keys, key))
                        return 0;
                if (auth == AUTH_BEARER_TOKEN && t && keys_check(&req->srv->keys, t))
                        return 0;
                return b || key ? -EKEYREJECTED : -ENOKEY;
        }
        }
        return -EKEYREJECTED;
}
