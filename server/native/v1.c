/* SPDX-License-Identifier: Apache-2.0 */
#include "native/v1.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/errors.h"
#include "core/keys.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "mcp/mcp.h"
#include "native/v1-relay.h"
#include "core/validate.h"
#include "native/ws-terminal.h"
#include "buf.h"
#include "json-util.h"

enum v1_kind {
        V1_LOCAL, /* answered by sbxd from the buffered JSON body */
        V1_RELAY, /* streamed to the agent */
        V1_MCP,
        V1_TERMINAL,
};

struct v1_conn {
        enum v1_kind kind;
        char id[ROUTE_ID_MAX];
        const char *rest; /* into req->path: "/exec", ... NULL for /v1/sandboxes[/{id}] */
        struct buf body;  /* at most V1_MAX_JSON_BODY */
        bool too_large;
        struct v1_relay *relay;
};

bool route_v1_wants(const char *path)
{
        return strcmp(path, "/v1") == 0 || strncmp(path, "/v1/", 4) == 0 ||
               strcmp(path, "/mcp") == 0 || strcmp(path, "/mcp/") == 0;
}

void route_v1_free(struct v1_conn *c)
{
        if (!c)
                return;
        v1_relay_free(c->relay);
        buf_done(&c->body);
        free(c);
}

const char *v1_status_code(unsigned status)
{
        switch (status) {
        case 400:
                return "bad_request";
        case 401:
                return "unauthorized";
        case 403:
                return "forbidden";
        case 404:
                return "not_found";
        case 405:
                return "method_not_allowed";
        case 409:
                return "conflict";
        case 413:
                return "payload_too_large";
        case 422:
                return "unprocessable";
        case 502:
                return "sandbox_unavailable";
        case 503:
                return "unavailable";
        case 507:
                return "insufficient_storage";
        default:
                return status >= 500 ? "internal" : "bad_request";
        }
}

unsigned v1_errno_status(int r)
{
        return api_error_status(r);
}

enum MHD_Result v1_reply_json(struct request *req, unsigned status, const cJSON *o,
                              const char *hname, const char *hvalue)
{
        _cleanup_free_ char *text = o ? cJSON_PrintUnformatted(o) : NULL;
        if (!text)
                return MHD_NO;
        return http_reply_json_hdr(req, status, text, hname, hvalue);
}

enum MHD_Result v1_reply_error(struct request *req, unsigned status, const char *code,
                               const char *fmt, ...)
{
        char msg[1200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
        if (!e || !cJSON_AddStringToObject(e, "code", code ? code : v1_status_code(status)) ||
            !cJSON_AddStringToObject(e, "message", msg))
                return MHD_NO;
        if (status >= 500 && status != 502)
                log_warning("req=%s %s %s → %u: %s", req->rid, req->method, req->path, status, msg);
        return v1_reply_json(req, status, o, NULL, NULL);
}

bool v1_authorized(struct request *req)
{
        const char *a = http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
        if (a && strncasecmp(a, "Bearer ", 7) == 0) {
                a += 7;
                while (*a == ' ')
                        a++;
                return keys_check(&req->srv->keys, a);
        }
        a = http_header(req, "X-API-KEY");
        return a && keys_check(&req->srv->keys, a);
}

cJSON *v1_sandbox_json(const struct sandbox *s)
{
        char started[32], ends[32];
        cJSON *o = cJSON_CreateObject();
        rfc3339_format(s->started_at, started);
        rfc3339_format(sandbox_get_end_at(s), ends);
        if (!o || !cJSON_AddStringToObject(o, "id", s->id) ||
            !cJSON_AddStringToObject(o, "template", s->template_id) ||
            !cJSON_AddStringToObject(o, "state", sandbox_is_paused(s) ? "paused" : "running") ||
            !cJSON_AddStringToObject(o, "started_at", started) ||
            !cJSON_AddStringToObject(o, "end_at", ends) ||
            !cJSON_AddNumberToObject(o, "cpu_count", s->cpu_count) ||
            !cJSON_AddNumberToObject(o, "memory_mb", s->memory_mb) ||
            !cJSON_AddItemToObject(o, "metadata",
                                   s->metadata ? cJSON_Duplicate(s->metadata, 1)
                                               : cJSON_CreateObject())) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}

/* ---- /v1/sandboxes ---- */

static enum MHD_Result not_found(struct request *req, const char *id)
{
        return v1_reply_error(req, 404, "not_found", "sandbox %s not found", id);
}

/* {template?, timeout?, env?, metadata?} → create_params. */
static int parse_create(const cJSON *body, struct create_params *p, const char **msg)
{
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "template");
        int r;
        *p = (struct create_params){0};
        snprintf(p->template_id, sizeof(p->template_id), "base");
        if (t && !cJSON_IsNull(t)) {
                if (!cJSON_IsString(t) || !template_name_valid(t->valuestring)) {
                        *msg = "template must be a template name ([A-Za-z0-9._-], at most 64)";
                        return -EINVAL;
                }
                snprintf(p->template_id, sizeof(p->template_id), "%s", t->valuestring);
        }
        if ((r = validate_timeout(body, TIMEOUT_DEFAULT_S, &p->timeout_s, msg)) < 0 ||
            (r = validate_string_map(body, "metadata", &p->metadata, msg)) < 0 ||
            (r = validate_string_map(body, "env", &p->env_vars, msg)) < 0) {
                create_params_done(p);
                return r;
        }
        return 0;
}

static enum MHD_Result handle_create(struct request *req, const cJSON *body)
{
        struct create_params p;
        const char *msg = "invalid body";
        char err[768] = "";
        int r = parse_create(body, &p, &msg);
        if (r < 0)
                return v1_reply_error(req, 400, "bad_request", "%s", msg);
        _cleanup_sandbox_ struct sandbox *s = NULL;
        r = lifecycle_create(req->srv, &p, &s, err, sizeof(err));
        create_params_done(&p);
        if (r < 0)
                return v1_reply_error(req, v1_errno_status(r), NULL, "%s", err);
        _cleanup_json_ cJSON *o = v1_sandbox_json(s);
        return v1_reply_json(req, 201, o, NULL, NULL);
}

static enum MHD_Result handle_list(struct request *req)
{
        struct sandbox **all = NULL;
        size_t n = 0;
        int r = registry_list(req->srv->registry, &all, &n);
        if (r < 0)
                return v1_reply_error(req, 500, NULL, "listing sandboxes failed");
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *arr = o ? cJSON_AddArrayToObject(o, "sandboxes") : NULL;
        for (size_t i = 0; i < n; i++) {
                if (arr)
                        cJSON_AddItemToArray(arr, v1_sandbox_json(all[i]));
                sandbox_unref(all[i]);
        }
        free(all);
        return v1_reply_json(req, 200, o, NULL, NULL);
}

static enum MHD_Result handle_local(struct request *req, struct v1_conn *c)
{
        bool get = strcmp(req->method, "GET") == 0, post = strcmp(req->method, "POST") == 0;
        bool del = strcmp(req->method, "DELETE") == 0;
        _cleanup_json_ cJSON *body = NULL;
        const char *msg = NULL;
        int r = json_parse_body(buf_str(&c->body), c->body.len, &body, &msg);
        if (r < 0)
                return v1_reply_error(req, 400, "bad_request", "%s", msg);
        if (!c->id[0]) {
                if (post)
                        return handle_create(req, body);
                return handle_list(req);
        }
        if (get) {
                _cleanup_sandbox_ struct sandbox *s = registry_get(req->srv->registry, c->id);
                if (!s)
                        return not_found(req, c->id);
                _cleanup_json_ cJSON *o = v1_sandbox_json(s);
                return v1_reply_json(req, 200, o, NULL, NULL);
        }
        if (del) {
                if (lifecycle_kill(req->srv, c->id) < 0)
                        return not_found(req, c->id);
                return http_reply_204(req);
        }
        return v1_reply_error(req, 405, NULL, "%s not allowed here", req->method);
}

/* ---- dispatch ---- */

bool v1_path_split(const char *path, char id[static ROUTE_ID_MAX], const char **ret_rest)
{
        static const char pre[] = "/v1/sandboxes";
        id[0] = 0;
        *ret_rest = NULL;
        if (strncmp(path, pre, sizeof(pre) - 1) != 0)
                return false;
        path += sizeof(pre) - 1;
        if (*path == 0 || strcmp(path, "/") == 0)
                return true;
        if (*path != '/')
                return false;
        path++;
        size_t l = strcspn(path, "/");
        if (l == 0 || l >= ROUTE_ID_MAX)
                return false;
        memcpy(id, path, l);
        id[l] = 0;
        *ret_rest = path[l] && strcmp(path + l, "/") != 0 ? path + l : NULL;
        return true;
}

static bool method_ok(const char *m, const struct v1_conn *c)
{
        if (!c->id[0])
                return strcmp(m, "GET") == 0 || strcmp(m, "POST") == 0;
        if (!c->rest)
                return strcmp(m, "GET") == 0 || strcmp(m, "DELETE") == 0;
        return strcmp(m, "GET") == 0 || strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 ||
               strcmp(m, "DELETE") == 0;
}

static enum MHD_Result begin_relay(struct request *req, struct v1_conn *c)
{
        char path[512];
        if ((size_t)snprintf(path, sizeof(path), "/v1%s", c->rest) >= sizeof(path))
                return v1_reply_error(req, 404, NULL, "no such route");
        _cleanup_sandbox_ struct sandbox *s =
            sandbox_id_valid(c->id) ? registry_get(req->srv->registry, c->id) : NULL;
        if (!s)
                return not_found(req, c->id);
        if (sandbox_is_paused(s)) /* its agent is frozen: nothing would answer */
                return v1_reply_error(req, 409, "sandbox_paused",
                                      "sandbox %s is paused: resume it (POST "
                                      "/sandboxes/%s/resume or connect) first",
                                      c->id, c->id);
        if (strcmp(c->rest, "/terminal") == 0 && strcmp(req->method, "GET") == 0) {
                c->kind = V1_TERMINAL;
                return MHD_YES;
        }
        /* File writes are raw bytes whatever the client labelled them; other bodies JSON. */
        const char *ct =
            strcmp(c->rest, "/files") == 0 ? "application/octet-stream" : "application/json";
        c->kind = V1_RELAY;
        return v1_relay_begin(req, s, path, ct, &c->relay);
}

enum MHD_Result route_v1_begin(struct request *req)
{
        struct v1_conn *c = calloc(1, sizeof(*c));
        if (!c)
                return MHD_NO;
        req->v1 = c;
        bool mcp = strncmp(req->path, "/mcp", 4) == 0;
        if (!mcp && !v1_path_split(req->path, c->id, &c->rest))
                return v1_reply_error(req, 404, NULL, "no such route: %s %s", req->method,
                                      req->path);
        if (!v1_authorized(req) && !(!mcp && ws_terminal_token_ok(req)))
                return v1_reply_error(req, 401, NULL,
                                      "missing or invalid API key: send Authorization: Bearer "
                                      "<key>");
        if (mcp) {
                c->kind = V1_MCP;
                return MHD_YES;
        }
        if (!method_ok(req->method, c))
                return v1_reply_error(req, 405, NULL, "%s not allowed on %s", req->method,
                                      req->path);
        if (c->id[0] && !sandbox_id_valid(c->id))
                return not_found(req, c->id);
        if (c->rest)
                return begin_relay(req, c);
        c->kind = V1_LOCAL;
        return MHD_YES;
}

enum MHD_Result route_v1_upload(struct request *req, const char *data, size_t len)
{
        struct v1_conn *c = req->v1;
        if (c->kind == V1_RELAY)
                return v1_relay_upload(req, c->relay, data, len);
        if (c->too_large || c->body.len + len > V1_MAX_JSON_BODY) {
                c->too_large = true;
                return MHD_YES; /* dropped; 413 at the end */
        }
        return buf_add(&c->body, data, len) < 0 ? MHD_NO : MHD_YES;
}

enum MHD_Result route_v1_finish(struct request *req)
{
        struct v1_conn *c = req->v1;
        if (c->too_large)
                return v1_reply_error(req, 413, NULL, "request body larger than %d bytes",
                                      V1_MAX_JSON_BODY);
        switch (c->kind) {
        case V1_RELAY:
                return v1_relay_finish(req, c->relay);
        case V1_MCP:
                return mcp_handle(req, buf_str(&c->body), c->body.len);
        case V1_TERMINAL:
                return ws_terminal_upgrade(req, c->id);
        case V1_LOCAL:
                break;
        }
        return handle_local(req, c);
}
