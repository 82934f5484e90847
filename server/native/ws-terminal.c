/* SPDX-License-Identifier: Apache-2.0 */
#include "native/ws-terminal.h"
#include "lifecycle/registry.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <wslay/wslay.h>

#include "channel/agent-mhd.h"
#include "channel/agent-req.h"
#include "channel/agent-upgrade.h"
#include "frame.h"
#include "log.h"
#include "macros.h"
#include "core/query.h"
#include "native/v1-relay.h"
#include "native/v1.h"
#include "ws-socket.h"
#include "core/validate.h"

#define WS_MAX_MESSAGE        (64 * 1024) /* one client message */
#define WS_MAX_QUEUED         64          /* output messages queued for a slow client */
#define WS_AGENT_TIMEOUT      60000       /* a write to the agent, once the session runs */
#define WS_AGENT_OPEN_TIMEOUT 10000
#define WS_GUID               "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_SESSION_ID_MAX     64 /* hex digits of a terminal session id (?session=) */

struct ws_session {
        struct ws_socket ws;     /* the client's socket, and bytes MHD read past its head */
        struct agent_req *agent; /* the full-duplex request to the agent's /v1/terminal */
        bool agent_done, failed;
        bool close_pending; /* wslay sends control frames first: close once drained */
        char id[ROUTE_ID_MAX];
};

static bool header_has(struct request *req, const char *name, const char *token)
{
        const char *v = http_header(req, name);
        return v && strcasestr(v, token);
}

/* base64(sha1(key + GUID)) into out (>= 29 bytes). */
static void accept_key(const char *key, char *out)
{
        struct sha1_ctx ctx;
        uint8_t digest[SHA1_DIGEST_SIZE];
        sha1_init(&ctx);
        sha1_update(&ctx, strlen(key), (const uint8_t *)key);
        sha1_update(&ctx, strlen(WS_GUID), (const uint8_t *)WS_GUID);
        sha1_digest(&ctx, sizeof(digest), digest);
        base64_encode_raw(out, sizeof(digest), digest);
        out[BASE64_ENCODE_RAW_LENGTH(sizeof(digest))] = 0;
}

/* ---- wslay callbacks ---- */

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud)
{
        return ws_socket_recv(ctx, &((struct ws_session *)ud)->ws, buf, len);
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *ud)
{
        return ws_socket_send(ctx, &((struct ws_session *)ud)->ws, data, len);
}

static void agent_send(struct ws_session *s, uint8_t tag, const void *d, size_t n)
{
        uint8_t buf[1 + WS_MAX_MESSAGE];
        if (s->agent_done || n > WS_MAX_MESSAGE)
                return;
        buf[0] = tag;
        if (n)
                memcpy(buf + 1, d, n);
        if (agent_req_send(s->agent, buf, n + 1) < 0)
                s->failed = true;
}

/* A text message: a JSON control message, else raw input. */
static void on_text(struct ws_session *s, const uint8_t *msg, size_t len)
{
        cJSON *o = msg[0] == '{' ? cJSON_ParseWithLength((const char *)msg, len) : NULL;
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
        if (cJSON_IsString(type) && strcmp(type->valuestring, "resize") == 0) {
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "cols");
                const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "rows");
                if (cJSON_IsNumber(c) && cJSON_IsNumber(r) && c->valueint >= 1 &&
                    c->valueint <= 1000 && r->valueint >= 1 && r->valueint <= 1000) {
                        uint8_t d[4] = {(uint8_t)(c->valueint >> 8), (uint8_t)c->valueint,
                                        (uint8_t)(r->valueint >> 8), (uint8_t)r->valueint};
                        agent_send(s, 1, d, sizeof(d));
                }
        } else if (cJSON_IsString(type) && strcmp(type->valuestring, "input") == 0) {
                const cJSON *d = cJSON_GetObjectItemCaseSensitive(o, "data");
                if (cJSON_IsString(d))
                        agent_send(s, 0, d->valuestring, strlen(d->valuestring));
        } else
                agent_send(s, 0, msg, len);
        cJSON_Delete(o);
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
                   void *ud)
{
        struct ws_session *s = ud;
        if (a->opcode == WSLAY_BINARY_FRAME)
                agent_send(s, 0, a->msg, a->msg_length);
        else if (a->opcode == WSLAY_TEXT_FRAME && a->msg_length > 0)
                on_text(s, a->msg, a->msg_length);
}

/* One frame from the agent: PTY output → binary message; exit → text message + close. */
static void from_agent(wslay_event_context_ptr ctx, struct ws_session *s)
{
        const uint8_t *frame;
        uint32_t len;
        if (agent_req_next(s->agent, &frame, &len) <= 0 || len == 0) {
                s->agent_done = true;
                wslay_event_queue_close(ctx, 1000, NULL, 0);
                return;
        }
        if (frame[0] == 0) {
                struct wslay_event_msg m = {WSLAY_BINARY_FRAME, frame + 1, len - 1};
                wslay_event_queue_msg(ctx, &m);
                return;
        }
        if (frame[0] == 2) { /* the session id (hex: anything else from the agent is dropped) */
                char text[64 + WS_SESSION_ID_MAX];
                size_t l = len - 1;
                if (l == 0 || l > WS_SESSION_ID_MAX ||
                    strspn(strndupa((const char *)frame + 1, l), "0123456789abcdef") != l)
                        return;
                int n = snprintf(text, sizeof(text), "{\"type\":\"session\",\"id\":\"%.*s\"}",
                                 (int)l, (const char *)frame + 1);
                struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)text, (size_t)n};
                wslay_event_queue_msg(ctx, &m);
                return;
        }
        char text[96];
        long code = len < 12 ? strtol(strndupa((const char *)frame + 1, len - 1), NULL, 10) : -1;
        int n = snprintf(text, sizeof(text), "{\"type\":\"exit\",\"exit_code\":%ld}", code);
        struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)text, (size_t)n};
        wslay_event_queue_msg(ctx, &m);
        s->agent_done = true;
        s->close_pending = true;
}

static void session_run(struct ws_session *s)
{
        struct wslay_event_callbacks cb = {
            .recv_callback = on_recv, .send_callback = on_send, .on_msg_recv_callback = on_msg};
        wslay_event_context_ptr ctx;
        if (wslay_event_context_server_init(&ctx, &cb, s) != 0)
                return;
        wslay_event_config_set_max_recv_msg_length(ctx, WS_MAX_MESSAGE);

        while (!s->failed && (wslay_event_want_read(ctx) || wslay_event_want_write(ctx))) {
                bool take = !s->agent_done && wslay_event_get_queued_msg_count(ctx) < WS_MAX_QUEUED;
                struct pollfd p[2] = {{.fd = s->ws.fd, .events = ws_socket_poll_events(ctx)},
                                      {.fd = take ? agent_req_fd(s->agent) : -1, .events = POLLIN}};
                if (ws_socket_has_pending(&s->ws))
                        p[0].revents = POLLIN;
                else if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && wslay_event_recv(ctx) != 0)
                        break;
                if (p[1].revents)
                        from_agent(ctx, s);
                if (wslay_event_want_write(ctx) && wslay_event_send(ctx) != 0)
                        break;
                if (s->close_pending && wslay_event_get_queued_msg_count(ctx) == 0) {
                        s->close_pending = false;
                        wslay_event_queue_close(ctx, 1000, NULL, 0);
                }
        }
        /* The client went without a close frame (a network blip, a tab that crashed): the
         * agent keeps the shell a while for a reconnect with ?session= (api: the agent's
         * NATIVE_TERM_DETACH). A close frame ends the shell, as does the shell's own exit. */
        if (!s->agent_done && !wslay_event_get_close_received(ctx))
                agent_send(s, 2, NULL, 0);
        wslay_event_context_free(ctx);
}

static void terminal_run(struct agent_upgraded *u)
{
        struct ws_session s = {.ws = {.fd = u->up.sock,
                                      .pending = (const uint8_t *)u->up.extra,
                                      .pending_len = u->up.extra_len},
                               .agent = u->q};
        snprintf(s.id, sizeof(s.id), "%s", u->up.name);
        session_run(&s);
        log_info("sandbox %s: terminal session ended", s.id);
}

/* The request for the agent's /v1/terminal with only cols, rows and user from the query
 * (never the token); then its answer head. */
static int open_agent(struct request *req, const struct sandbox *s, struct agent_req **ret,
                      struct sbx_resp_head *ret_head)
{
        _cleanup_agent_req_ struct agent_req *q = NULL;
        _cleanup_free_ char *query = NULL;
        static const char *const keep[] = {"cols", "rows", "user", "session"};
        for (size_t i = 0; i < ELEMENTSOF(keep); i++) {
                const char *v = http_arg(req, keep[i]);
                if (v && url_query_append(&query, keep[i], v) < 0)
                        return -ENOMEM;
        }
        struct agent_head h;
        struct agent_req_opts o = {.timeout_ms = WS_AGENT_OPEN_TIMEOUT, .duplex = true};
        agent_head_init(&h, SBX_PORT_INTERNAL, "GET", "/v1/terminal", query, NULL);
        int r = agent_req_open(s->dir, &h.h, &o, &q);
        if (r >= 0)
                r = agent_req_read_head(q, ret_head);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(q);
        return 0;
}

int ws_terminal_begin(struct request *req)
{
        int status;
        _cleanup_sandbox_ struct sandbox *s = v1_running_sandbox(req, req->args.v[0], &status);
        return s ? 0 : status;
}

int ws_terminal_upgrade(struct request *req)
{
        const char *id = req->args.v[0];
        const char *key = http_header(req, "Sec-WebSocket-Key");
        const char *ver = http_header(req, "Sec-WebSocket-Version");
        if (!header_has(req, "Upgrade", "websocket") || !header_has(req, "Connection", "upgrade") ||
            !key || strlen(key) != 24)
                return v1_reply_error(req, 400, NULL,
                                      "the terminal is a WebSocket: send Upgrade: websocket, "
                                      "Connection: Upgrade and Sec-WebSocket-Key");
        if (!ver || strcmp(ver, "13") != 0)
                return http_reply_json_hdr(
                    req, 426,
                    "{\"error\":{\"code\":\"upgrade_required\",\"message\":\"WebSocket "
                    "version 13 is required\"}}",
                    "Sec-WebSocket-Version", "13");
        const char *session = http_arg(req, "session");
        if (session && (!*session || strlen(session) > WS_SESSION_ID_MAX ||
                        strspn(session, "0123456789abcdef") != strlen(session)))
                return v1_reply_error(req, 400, NULL,
                                      "session must be the hex id the terminal sent");
        _cleanup_sandbox_ struct sandbox *s = registry_get(req->srv->registry, id);
        if (!s)
                return v1_reply_not_found(req, id);
        _cleanup_agent_req_ struct agent_req *q = NULL;
        struct sbx_resp_head h = {};
        int r = open_agent(req, s, &q, &h);
        if (r < 0)
                return v1_reply_error(req, 502, NULL, "the sandbox %s is not reachable", id);
        if (h.status != 200) {
                /* the agent's refusal, verbatim (it answers in the native shape) */
                if (h.status < 200 || h.status > 599)
                        r = -EPROTO;
                else
                        r = agent_mhd_respond(req, &q, &h, V1_RELAY_MAX_ERROR);
                sbx_resp_head_free(&h);
                if (r == -EPROTO || r == -EMSGSIZE)
                        return v1_reply_error(req, 502, NULL, "invalid answer from the sandbox");
                return r;
        }
        sbx_resp_head_free(&h);
        /* interactive from here: reads wait as long as the shell is quiet */
        if (agent_req_set_timeouts(q, 0, WS_AGENT_TIMEOUT) < 0)
                return v1_reply_error(req, 502, NULL, "the sandbox %s is not reachable", id);
        struct agent_upgraded *u = NULL;
        struct MHD_Response *resp = agent_upgrade_response(terminal_run, id, &u);
        if (!resp)
                return -ENOMEM;
        u->q = TAKE_PTR(q);
        char accept[32];
        accept_key(key, accept);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
        MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
        return agent_upgrade_queue(req, u, resp);
}
