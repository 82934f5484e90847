/* SPDX-License-Identifier: Apache-2.0 */
#include "native/v1-relay.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "channel/agent-client.h"
#include "frame.h"
#include "log.h"
#include "macros.h"
#include "core/query.h"
#include "channel/relay.h"
#include "native/v1.h"

#define RELAY_SEND_TIMEOUT_MS 60000
#define RELAY_BLOCK           (256 * 1024)

struct v1_relay {
        int fd;
        int client_fd;
        bool upload_failed;
        char id[32];
};

void v1_relay_free(struct v1_relay *rl)
{
        if (!rl)
                return;
        safe_close(rl->fd);
        free(rl);
}

static int send_head(int fd, uint16_t port, const char *method, const char *path, const char *query,
                     const char *content_type)
{
        struct sbx_header h = {"Content-Type", content_type};
        struct sbx_req_head head = {.port = port,
                                    .method = method,
                                    .path = path,
                                    .query = query ? query : "",
                                    .n_headers = content_type ? 1 : 0,
                                    .headers = &h};
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        int r = sbx_req_head_encode(&head, &buf, &len);
        if (r < 0)
                return r;
        return sbx_frame_write(fd, SBX_FRAME_REQ_HEAD, buf, len);
}

enum MHD_Result v1_relay_begin(struct request *req, const struct sandbox *s, const char *agent_path,
                               const char *content_type, struct v1_relay **ret)
{
        _cleanup_free_ char *query = NULL;
        struct v1_relay *rl = calloc(1, sizeof(*rl));
        if (!rl || query_from_target(req->target, &query) < 0) {
                free(rl);
                return MHD_NO;
        }
        rl->fd = -EBADF;
        snprintf(rl->id, sizeof(rl->id), "%s", s->id);
        rl->client_fd = relay_client_fd(req->conn);
        *ret = rl;
        int r = agent_connect(s->dir, &rl->fd);
        if (r >= 0)
                r = agent_set_timeouts(rl->fd, RELAY_SEND_TIMEOUT_MS);
        if (r >= 0)
                r = send_head(rl->fd, SBX_PORT_INTERNAL, req->method, agent_path, query,
                              content_type);
        if (r < 0) {
                log_warning_errno(r, "req=%s sandbox %s: agent: %m", req->rid, s->id);
                return v1_reply_error(req, 502, "sandbox_unavailable",
                                      "the sandbox %s is not reachable", s->id);
        }
        return MHD_YES;
}

enum MHD_Result v1_relay_upload(struct request *req, struct v1_relay *rl, const char *data,
                                size_t len)
{
        /* The agent may answer before the whole body (a refusal): stop sending then. */
        if (!rl->upload_failed && relay_upload(rl->fd, data, len, RELAY_SEND_TIMEOUT_MS, false) < 0)
                rl->upload_failed = true;
        return MHD_YES;
}

/* Read a body up to END into a NUL-terminated buffer, at most max bytes. */
static int read_body(int fd, int client_fd, uint8_t *frame, size_t max, int timeout_ms, char **ret,
                     size_t *ret_len)
{
        _cleanup_free_ char *b = malloc(1);
        size_t n = 0;
        if (!b)
                return -ENOMEM;
        for (;;) {
                uint32_t len;
                int r = client_fd >= -1 ? relay_wait_agent(fd, client_fd, NULL) : 0;
                if (r >= 0)
                        r = sbx_frame_read_body(fd, frame, &len);
                if (r == -EAGAIN)
                        r = -ETIMEDOUT;
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (n + len > max)
                        return -EMSGSIZE;
                char *nb = realloc(b, n + len + 1);
                if (!nb)
                        return -ENOMEM;
                b = nb;
                memcpy(b + n, frame, len);
                n += len;
        }
        b[n] = 0;
        *ret = TAKE_PTR(b);
        *ret_len = n;
        return 0;
}

static bool code_valid(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 40)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_'))
                        return false;
        return true;
}

void v1_error_fields(const char *body, size_t len, char code[static 41], char msg[static 1025])
{
        cJSON *o = cJSON_ParseWithLength(body, len);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
        const cJSON *src = cJSON_IsObject(e) ? e : o;
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(src, "code");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(src, "message");
        snprintf(code, 41, "%s",
                 cJSON_IsString(c) && code_valid(c->valuestring) ? c->valuestring : "");
        snprintf(msg, 1025, "%s",
                 cJSON_IsString(m) && *m->valuestring ? m->valuestring
                                                      : "the sandbox refused the request");
        cJSON_Delete(o);
}

enum MHD_Result v1_relay_error(struct request *req, unsigned status, const char *body, size_t len)
{
        char code[41], msg[1025];
        v1_error_fields(body, len, code, msg);
        if (status < 400 || status > 599)
                status = 502;
        return v1_reply_error(req, status, code[0] ? code : NULL, "%s", msg);
}

static bool header_copied(const char *n)
{
        return strcasecmp(n, "Content-Type") == 0 || strcasecmp(n, "Content-Disposition") == 0 ||
               strncasecmp(n, "X-Sbx-", 6) == 0;
}

static enum MHD_Result respond(struct request *req, struct relay_stream *st,
                               const struct sbx_resp_head *h)
{
        if (relay_content_length(h, &st->expected) < 0) {
                relay_stream_free(st);
                return v1_reply_error(req, 502, "sandbox_unavailable",
                                      "invalid answer from the sandbox");
        }
        struct MHD_Response *resp = MHD_create_response_from_callback(
            st->expected, RELAY_BLOCK, relay_stream_read, st, relay_stream_free);
        if (!resp) {
                relay_stream_free(st);
                return MHD_NO;
        }
        for (size_t i = 0; i < h->n_headers; i++)
                if (header_copied(h->headers[i].name))
                        MHD_add_response_header(resp, h->headers[i].name, h->headers[i].value);
        req->status = h->status;
        enum MHD_Result ret = MHD_queue_response(req->conn, h->status, resp);
        MHD_destroy_response(resp);
        return ret;
}

enum MHD_Result v1_relay_finish(struct request *req, struct v1_relay *rl)
{
        if (!rl->upload_failed)
                (void)sbx_frame_write(rl->fd, SBX_FRAME_END, NULL, 0);
        struct relay_stream *st;
        if (relay_stream_new(&rl->fd, rl->client_fd, false, NULL, &st) < 0)
                return MHD_NO;
        struct sbx_resp_head h = {};
        int r = relay_read_head(st, &h);
        if (r >= 0 && (h.status < 200 || h.status > 599))
                r = -EPROTO;
        if (r < 0) {
                sbx_resp_head_free(&h);
                relay_stream_free(st);
                if (r == -ECONNABORTED)
                        return MHD_NO;
                return v1_reply_error(req, 502, "sandbox_unavailable",
                                      "the sandbox closed the connection");
        }
        if (h.status < 400) {
                enum MHD_Result ret = respond(req, st, &h);
                sbx_resp_head_free(&h);
                return ret;
        }
        _cleanup_free_ char *body = NULL;
        size_t blen = 0;
        r = read_body(st->fd, st->client_fd, st->buf, V1_RELAY_MAX_ERROR, 0, &body, &blen);
        unsigned status = h.status;
        sbx_resp_head_free(&h);
        relay_stream_free(st);
        if (r < 0)
                return v1_reply_error(req, 502, "sandbox_unavailable",
                                      "the sandbox sent an invalid error answer");
        return v1_relay_error(req, status, body, blen);
}

void v1_reply_done(struct v1_reply *r)
{
        free(r->body);
        r->body = NULL;
}

static int send_body(int fd, const void *body, size_t len)
{
        const char *p = body;
        int r = 0;
        for (size_t off = 0; r >= 0 && off < len;) {
                size_t k = MIN(len - off, (size_t)SBX_FRAME_MAX_PAYLOAD);
                r = sbx_frame_write(fd, SBX_FRAME_DATA, p + off, k);
                off += k;
        }
        return r < 0 ? r : sbx_frame_write(fd, SBX_FRAME_END, NULL, 0);
}

int v1_agent_send(const char *sandbox_dir, uint16_t port, const char *method, const char *path,
                  const char *query, const char *content_type, const void *body, size_t len,
                  int timeout_ms, int *ret_fd)
{
        _cleanup_close_ int fd = -EBADF;
        int r;
        if ((r = agent_connect(sandbox_dir, &fd)) < 0 ||
            (r = agent_set_timeouts(fd, timeout_ms)) < 0 ||
            (r = send_head(fd, port, method, path, query, content_type)) < 0 ||
            (r = send_body(fd, body, len)) < 0)
                return r;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int v1_agent_read_head(int fd, struct v1_reply *ret)
{
        _cleanup_free_ uint8_t *frame = malloc(SBX_FRAME_MAX_PAYLOAD);
        struct sbx_resp_head h = {};
        uint8_t type;
        uint32_t flen;

        *ret = (struct v1_reply){0};
        if (!frame)
                return -ENOMEM;
        int r = sbx_frame_read(fd, &type, frame, &flen);
        if (r == -EAGAIN)
                return -ETIMEDOUT;
        if (r < 0)
                return r;
        if (type != SBX_FRAME_RESP_HEAD || sbx_resp_head_decode(frame, flen, &h) < 0)
                return -EPROTO;
        ret->status = h.status;
        const char *ct = sbx_header_get(h.headers, h.n_headers, "Content-Type");
        snprintf(ret->content_type, sizeof(ret->content_type), "%s", ct ? ct : "");
        sbx_resp_head_free(&h);
        return ret->status;
}

int v1_agent_open(const char *sandbox_dir, uint16_t port, const char *method, const char *path,
                  const char *query, const char *content_type, const void *body, size_t len,
                  int timeout_ms, int *ret_fd, struct v1_reply *ret)
{
        _cleanup_close_ int fd = -EBADF;
        *ret = (struct v1_reply){0};
        int r = v1_agent_send(sandbox_dir, port, method, path, query, content_type, body, len,
                              timeout_ms, &fd);
        if (r >= 0)
                r = v1_agent_read_head(fd, ret);
        if (r >= 0)
                *ret_fd = TAKE_FD(fd);
        return r;
}

int v1_agent_read_body(int fd, size_t max, int timeout_ms, struct v1_reply *ret)
{
        _cleanup_free_ uint8_t *frame = malloc(SBX_FRAME_MAX_PAYLOAD);
        if (!frame)
                return -ENOMEM;
        return read_body(fd, -2, frame, max, timeout_ms, &ret->body, &ret->len);
}

int v1_agent_call(const char *sandbox_dir, const char *method, const char *path, const char *query,
                  const char *content_type, const void *body, size_t len, size_t max,
                  int timeout_ms, struct v1_reply *ret)
{
        _cleanup_close_ int fd = -EBADF;
        int r = v1_agent_open(sandbox_dir, SBX_PORT_INTERNAL, method, path, query, content_type,
                              body, len, timeout_ms, &fd, ret);
        if (r < 0)
                return r;
        r = v1_agent_read_body(fd, max, timeout_ms, ret);
        return r < 0 ? r : ret->status;
}

int v1_read_error_body(int fd, char **ret, size_t *ret_len)
{
        _cleanup_free_ uint8_t *frame = malloc(SBX_FRAME_MAX_PAYLOAD);
        if (!frame)
                return -ENOMEM;
        return read_body(fd, -2, frame, V1_RELAY_MAX_ERROR, 0, ret, ret_len);
}
