/* SPDX-License-Identifier: Apache-2.0 */
/* The answer side of core/request.h: RESP_HEAD, DATA, END, and the error answers. */
#include "core/request.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "format-util.h"
#include "json-util.h"
#include "macros.h"

/* ---- bodies ---- */

static int print_out(cJSON *j, char **ret, size_t *ret_len)
{
        char *s = cJSON_PrintUnformatted(j);
        if (!s)
                return -ENOMEM;
        *ret = s;
        *ret_len = strlen(s);
        return 0;
}

int agent_rest_error_json(int status, const char *message, char **ret, size_t *ret_len)
{
        _cleanup_json_ cJSON *root = cJSON_CreateObject();

        if (!root || !cJSON_AddNumberToObject(root, "code", status) ||
            !cJSON_AddStringToObject(root, "message", message ? message : ""))
                return -ENOMEM;
        return print_out(root, ret, ret_len);
}

int agent_connect_error_json(const char *code, const char *message, char **ret, size_t *ret_len)
{
        _cleanup_json_ cJSON *root = cJSON_CreateObject();

        if (!root || !cJSON_AddStringToObject(root, "code", code) ||
            (message && !cJSON_AddStringToObject(root, "message", message)))
                return -ENOMEM;
        return print_out(root, ret, ret_len);
}

int agent_end_stream_json(const char *code, const char *message, char **ret, size_t *ret_len)
{
        _cleanup_json_ cJSON *root = cJSON_CreateObject();
        cJSON *err;

        if (!root)
                return -ENOMEM;
        if (code && (!(err = cJSON_AddObjectToObject(root, "error")) ||
                     !cJSON_AddStringToObject(err, "code", code) ||
                     (message && !cJSON_AddStringToObject(err, "message", message))))
                return -ENOMEM;
        return print_out(root, ret, ret_len);
}

int agent_connect_envelope(uint8_t flags, const char *msg, size_t msg_len, uint8_t **ret,
                           size_t *ret_len)
{
        uint8_t *b;

        if (msg_len > UINT32_MAX)
                return -EMSGSIZE;
        b = malloc(CONNECT_ENVELOPE_HEADER_SIZE + msg_len);
        if (!b)
                return -ENOMEM;
        connect_envelope_header(b, flags, (uint32_t)msg_len);
        memcpy(b + CONNECT_ENVELOPE_HEADER_SIZE, msg, msg_len);
        *ret = b;
        *ret_len = CONNECT_ENVELOPE_HEADER_SIZE + msg_len;
        return 0;
}

/* ---- frames ---- */

int agent_respond_head_list(struct agent_request *r, int status, const struct sbx_header *headers,
                            size_t n)
{
        struct sbx_resp_head h = {
            .status = (uint16_t)status, .n_headers = n, .headers = (struct sbx_header *)headers};
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        int e = sbx_resp_head_encode(&h, &buf, &len);
        if (e < 0)
                return e;
        r->resp_started = true;
        r->status = status;
        e = sbx_frame_write(r->fd, SBX_FRAME_RESP_HEAD, buf, len);
        return e < 0 ? e : status;
}

int agent_respond_head(struct agent_request *r, int status, const char *const *headers)
{
        struct sbx_header hs[16];
        size_t n = 0;

        for (; headers && headers[2 * n]; n++) {
                if (n >= ELEMENTSOF(hs))
                        return -E2BIG;
                hs[n].name = headers[2 * n];
                hs[n].value = headers[2 * n + 1];
        }
        return agent_respond_head_list(r, status, hs, n);
}

int agent_respond_data(struct agent_request *r, const void *buf, size_t len)
{
        const uint8_t *p = buf;
        while (len > 0) {
                size_t n = MIN(len, (size_t)SBX_FRAME_MAX_PAYLOAD);
                int e = sbx_frame_write(r->fd, SBX_FRAME_DATA, p, n);
                if (e < 0)
                        return e;
                p += n;
                len -= n;
        }
        return 0;
}

int agent_respond_end(struct agent_request *r)
{
        int e = sbx_frame_write(r->fd, SBX_FRAME_END, NULL, 0);
        return e < 0 ? e : r->status;
}

int agent_respond(struct agent_request *r, int status, const char *content_type, const void *body,
                  size_t len)
{
        char lenbuf[32];
        const char *headers[] = {"Content-Type", content_type, "Content-Length", lenbuf, NULL};
        int e;

        snprintf(lenbuf, sizeof(lenbuf), "%zu", len);
        e = agent_respond_head(r, status, content_type ? headers : NULL);
        if (e < 0)
                return e;
        e = agent_respond_data(r, body, len);
        if (e < 0)
                return e;
        return agent_respond_end(r);
}

int agent_respond_envelope(struct agent_request *r, uint8_t flags, const char *json, size_t len)
{
        _cleanup_free_ uint8_t *env = NULL;
        size_t env_len;
        int e = agent_connect_envelope(flags, json, len, &env, &env_len);
        if (e < 0)
                return e;
        return agent_respond_data(r, env, env_len);
}

/* ---- errors ---- */

int agent_respond_rest_error(struct agent_request *r, int status, const char *fmt, ...)
{
        _cleanup_free_ char *msg = FORMAT_VARARGS_DUP(fmt), *body = NULL;
        size_t len;
        int e;

        if (!msg)
                return -ENOMEM;
        if (r->route && r->route->rest_error)
                return r->route->rest_error(r, status, msg);
        e = agent_rest_error_json(status, msg, &body, &len);
        return e < 0 ? e : agent_respond(r, status, "application/json; charset=utf-8", body, len);
}

int agent_respond_connect_error(struct agent_request *r, const char *code, const char *fmt, ...)
{
        _cleanup_free_ char *msg = FORMAT_VARARGS_DUP(fmt), *body = NULL;
        size_t len;
        int e = msg ? agent_connect_error_json(code, msg, &body, &len) : -ENOMEM;

        return e < 0 ? e
                     : agent_respond(r, connect_code_http_status(code), "application/json", body,
                                     len);
}

int agent_respond_stream_error(struct agent_request *r, const char *code, const char *fmt, ...)
{
        static const char *const headers[] = {"Content-Type", "application/connect+json", NULL};
        _cleanup_free_ char *msg = FORMAT_VARARGS_DUP(fmt), *body = NULL;
        size_t len;
        int e = msg ? agent_end_stream_json(code, msg, &body, &len) : -ENOMEM;

        if (e >= 0 && !r->resp_started)
                e = agent_respond_head(r, 200, headers);
        if (e >= 0)
                e = agent_respond_envelope(r, CONNECT_FLAG_END_STREAM, body, len);
        return e < 0 ? e : agent_respond_end(r);
}
