/* SPDX-License-Identifier: Apache-2.0 */
#include "native/ws-terminal.h"
#include "lifecycle/registry.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <wslay/wslay.h>

#include "channel/agent-client.h"
#include "frame.h"
#include "core/keys.h"
#include "log.h"
#include "macros.h"
#include "core/query.h"
#include "native/v1-relay.h"
#include "native/v1.h"
#include "core/validate.h"

#define WS_MAX_MESSAGE   (64 * 1024) /* one client message */
#define WS_MAX_QUEUED    64          /* output messages queued for a slow client */
#define WS_AGENT_TIMEOUT 60000
#define WS_GUID          "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

struct ws_session {
        int sock;
        int agent;
        const uint8_t *extra; /* bytes MHD read past the request head */
        size_t extra_len;
        uint8_t *frame; /* SBX_FRAME_MAX_PAYLOAD */
        bool agent_done, failed;
        bool close_pending; /* wslay sends control frames first: close once drained */
        char id[32];
};

bool ws_terminal_token_ok(struct request *req)
{
        const char *t = MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, "token");
        size_t l = strlen(req->path);
        return t && l > 9 && strcmp(req->path + l - 9, "/terminal") == 0 &&
               keys_check(&req->srv->keys, t);
}

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
        struct ws_session *s = ud;
        if (s->extra_len > 0) {
                size_t k = MIN(len, s->extra_len);
                memcpy(buf, s->extra, k);
                s->extra += k;
                s->extra_len -= k;
                return (ssize_t)k;
        }
        ssize_t n = recv(s->sock, buf, len, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        if (n <= 0) {
                wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
        }
        return n;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *ud)
{
        struct ws_session *s = ud;
        ssize_t n = send(s->sock, data, len, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        if (n < 0) {
                wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
        }
        return n;
}

static void agent_send(struct ws_session *s, uint8_t tag, const void *d, size_t n)
{
        uint8_t buf[1 + WS_MAX_MESSAGE];
        if (s->agent_done || n > WS_MAX_MESSAGE)
                return;
        buf[0] = tag;
        memcpy(buf + 1, d, n);
        if (sbx_frame_write(s->agent, SBX_FRAME_DATA, buf, n + 1) < 0)
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
        uint8_t type;
        uint32_t len;
        if (sbx_frame_read(s->agent, &type, s->frame, &len) < 0 || type != SBX_FRAME_DATA ||
            len == 0) {
                s->agent_done = true;
                wslay_event_queue_close(ctx, 1000, NULL, 0);
                return;
        }
        if (s->frame[0] == 0) {
                struct wslay_event_msg m = {WSLAY_BINARY_FRAME, s->frame + 1, len - 1};
                wslay_event_queue_msg(ctx, &m);
                return;
        }
        char text[96];
        long code = len < 12 ? strtol(strndupa((const char *)s->frame + 1, len - 1), NULL, 10) : -1;
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
        (void)fcntl(s->sock, F_SETFL, fcntl(s->sock, F_GETFL) | O_NONBLOCK);
        while (!s->failed && (wslay_event_want_read(ctx) || wslay_event_want_write(ctx))) {
                bool take = !s->agent_done && wslay_event_get_queued_msg_count(ctx) < WS_MAX_QUEUED;
                struct pollfd p[2] = {
                    {.fd = s->sock,
                     .events = (short)((wslay_event_want_read(ctx) ? POLLIN : 0) |
                                       (wslay_event_want_write(ctx) ? POLLOUT : 0))},
                    {.fd = take ? s->agent : -1, .events = POLLIN}};
                if (s->extra_len > 0)
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
        wslay_event_context_free(ctx);
}

struct upgrade_ctx {
        int agent;
        char id[32];
};

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra,
                       size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        struct upgrade_ctx *u = cls;
        struct ws_session s = {.sock = sock,
                               .agent = u->agent,
                               .extra = (const uint8_t *)extra,
                               .extra_len = extra_len,
                               .frame = malloc(SBX_FRAME_MAX_PAYLOAD)};
        snprintf(s.id, sizeof(s.id), "%s", u->id);
        /* thread-per-connection: this is the connection's own thread, blocking is fine */
        if (s.frame)
                session_run(&s);
        log_info("sandbox %s: terminal session ended", s.id);
        free(s.frame);
        safe_close(u->agent);
        free(u);
        MHD_upgrade_action(urh, MHD_UPGRADE_ACTION_CLOSE);
}

/* REQ_HEAD for the agent's /v1/terminal with only cols, rows and user from the query (never
 * the token), then the answer head. Returns the agent's status or -errno. */
static int open_agent(struct request *req, const struct sandbox *s, int *ret_fd)
{
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *q = NULL;
        static const char *const keep[] = {"cols", "rows", "user"};
        for (size_t i = 0; i < ELEMENTSOF(keep); i++) {
                const char *v =
                    MHD_lookup_connection_value(req->conn, MHD_GET_ARGUMENT_KIND, keep[i]);
                if (v && query_append(&q, keep[i], v) < 0)
                        return -ENOMEM;
        }
        struct sbx_req_head h = {.port = SBX_PORT_INTERNAL,
                                 .method = "GET",
                                 .path = "/v1/terminal",
                                 .query = q ? q : ""};
        _cleanup_free_ uint8_t *buf = NULL, *frame = malloc(SBX_FRAME_MAX_PAYLOAD);
        size_t len;
        uint8_t type;
        uint32_t flen;
        struct sbx_resp_head rh = {};
        int r;
        if (!frame)
                return -ENOMEM;
        if ((r = agent_connect(s->dir, &fd)) < 0 || (r = agent_set_timeouts(fd, 10000)) < 0 ||
            (r = sbx_req_head_encode(&h, &buf, &len)) < 0 ||
            (r = sbx_frame_write(fd, SBX_FRAME_REQ_HEAD, buf, len)) < 0 ||
            (r = sbx_frame_read(fd, &type, frame, &flen)) < 0)
                return r;
        if (type != SBX_FRAME_RESP_HEAD || sbx_resp_head_decode(frame, flen, &rh) < 0)
                return -EPROTO;
        int status = rh.status;
        sbx_resp_head_free(&rh);
        if (status == 200) {
                /* interactive from here: reads wait as long as the shell is quiet */
                struct timeval none = {0}, send = {.tv_sec = WS_AGENT_TIMEOUT / 1000};
                if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none)) < 0 ||
                    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send, sizeof(send)) < 0)
                        return -errno;
        }
        *ret_fd = TAKE_FD(fd);
        return status;
}

enum MHD_Result ws_terminal_upgrade(struct request *req, const char *id)
{
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
        _cleanup_sandbox_ struct sandbox *s = registry_get(req->srv->registry, id);
        if (!s)
                return v1_reply_error(req, 404, NULL, "sandbox %s not found", id);
        int fd = -EBADF;
        int st = open_agent(req, s, &fd);
        if (st < 0)
                return v1_reply_error(req, 502, NULL, "the sandbox %s is not reachable", id);
        if (st != 200) {
                _cleanup_free_ char *body = NULL;
                size_t len = 0;
                int r = v1_read_error_body(fd, &body, &len);
                safe_close(fd);
                if (r < 0)
                        return v1_reply_error(req, 502, NULL, "invalid answer from the sandbox");
                return v1_relay_error(req, (unsigned)st, body, len);
        }
        struct upgrade_ctx *u = calloc(1, sizeof(*u));
        struct MHD_Response *resp = u ? MHD_create_response_for_upgrade(on_upgrade, u) : NULL;
        if (!resp) {
                free(u);
                safe_close(fd);
                return MHD_NO;
        }
        u->agent = fd;
        snprintf(u->id, sizeof(u->id), "%s", id);
        char accept[32];
        accept_key(key, accept);
        MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "websocket");
        MHD_add_response_header(resp, "Sec-WebSocket-Accept", accept);
        req->status = 101;
        enum MHD_Result ret = MHD_queue_response(req->conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
        MHD_destroy_response(resp);
        /* If the 101 never goes out, MHD never calls on_upgrade: u and fd leak here (rare;
         * the agent then sees its connection stay open until the sandbox goes). */
        return ret;
}
