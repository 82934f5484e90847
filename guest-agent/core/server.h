/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent channel server side: one connection = one request (api/frames.md). A connection
 * thread reads the REQ_HEAD, routes on (port, method, path) and the handler answers with
 * RESP_HEAD, DATA*, END through the helpers below. Handlers return >= 0, or -errno when the
 * connection is unusable (it is closed either way after the handler returns).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/users.h"
#include "frame.h"

#define AGENT_MAX_CONNECTIONS 256

struct agent_request {
        int fd;
        struct sbx_req_head head;
        bool body_done;     /* END of the request body was read */
        bool resp_started;  /* RESP_HEAD was sent */
        uint8_t *frame_buf; /* SBX_FRAME_MAX_PAYLOAD bytes */
};

/* Serve one accepted connection in a new detached thread (takes ownership of fd). Over
 * AGENT_MAX_CONNECTIONS concurrent connections it answers 503 inline and closes. */
void agent_server_spawn(int fd);

/* Serve one connection on the calling thread (used by the thread above and by tests). */
void agent_server_serve(int fd);

/* Give up this connection's slot in the connection bound while the thread keeps running (a
 * process stream whose client left keeps draining the process's pipes). Idempotent per
 * request. */
void agent_server_release_slot(struct agent_request *r);

const char *agent_request_header(const struct agent_request *r, const char *name);

/* Next body chunk: 1 with ret_buf and ret_len (valid until the next call), 0 at END, -errno
 * (-EPROTO for a frame out of order). */
int agent_request_read_body(struct agent_request *r, const uint8_t **ret_buf, size_t *ret_len);
/* Whole body into a malloc'd NUL-terminated buffer; -EMSGSIZE past max. */
int agent_request_read_body_all(struct agent_request *r, size_t max, uint8_t **ret,
                                size_t *ret_len);
/* Read and drop the rest of the body (bounded by max bytes; -EMSGSIZE past it). */
int agent_request_discard_body(struct agent_request *r, size_t max);

/*
 * Select the user a request acts as: override (e.g. the `username` query parameter) when
 * non-NULL, else `Authorization: Basic`, else the default user. -ENOENT for an unknown user,
 * -EINVAL for a malformed Authorization header; *ret_name is set (caller frees) even on
 * -ENOENT so the error can name the user.
 */
int agent_request_user(const struct agent_request *r, const char *override, struct agent_user *ret,
                       char **ret_name);

/*
 * Like envd's authn middleware: 1 when the request carries an Authorization header naming a
 * user that does not exist (or a malformed one), 0 otherwise. *ret_name (caller frees) names
 * the refused user when 1 is returned.
 */
int agent_request_basic_user_unknown(const struct agent_request *r, char **ret_name);

/* Response helpers. headers is a NULL-terminated list of name, value pairs (or NULL). */
int agent_respond_head(struct agent_request *r, int status, const char *const *headers);
int agent_respond_data(struct agent_request *r, const void *buf, size_t len);
int agent_respond_end(struct agent_request *r);
int agent_respond(struct agent_request *r, int status, const char *content_type, const void *body,
                  size_t len);
/* {"code":status,"message":...} with application/json; charset=utf-8 (envd REST errors). */
int agent_respond_rest_error(struct agent_request *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Unary Connect error: status mapped from code, {"code":"..","message":".."}. */
int agent_respond_connect_error(struct agent_request *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Streaming Connect error: HTTP 200, application/connect+json, one end-stream envelope
 * carrying the error (sends the head only when it was not sent yet). */
int agent_respond_stream_error(struct agent_request *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Read a server-stream request body that must be exactly one uncompressed Connect envelope.
 * Returns 1 with *ret_body (caller frees; *ret_msg points into it) and the message; otherwise
 * the request was answered with a stream error (returns that answer's result, <= 0) or
 * reading failed (-errno). */
int agent_request_read_envelope(struct agent_request *r, uint8_t **ret_body,
                                const uint8_t **ret_msg, uint32_t *ret_msg_len);
/* Send one Connect envelope (flags + JSON) as a DATA frame. */
int agent_respond_envelope(struct agent_request *r, uint8_t flags, const char *json, size_t len);
