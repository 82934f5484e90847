/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One request on the agent channel, as its handler sees it (api/frames.md): the decoded
 * REQ_HEAD, the body read frame by frame, and the answer sent as RESP_HEAD, DATA*, END through
 * the helpers below. The connection is closed after the handler returns (core/server.h).
 *
 * Return values: agent_respond_head(), agent_respond(), agent_respond_end() and the error
 * helpers return the HTTP status of the answer (> 0) or -errno, so that a handler can end with
 * `return agent_respond(...)` and return its status as core/route.h asks.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/route.h"
#include "core/users.h"
#include "frame.h"

struct agent_request {
        int fd;
        struct sbx_req_head head;
        const struct agent_route *route; /* the route being served; NULL when none matched */
        bool body_done;                  /* END of the request body was read */
        bool resp_started;               /* RESP_HEAD was sent */
        int status;                      /* the status of that RESP_HEAD */
        uint8_t *frame_buf;              /* SBX_FRAME_MAX_PAYLOAD bytes */
};

/* ---- the request ---- */

const char *agent_request_header(const struct agent_request *r, const char *name);

/* Whether the request is a Connect stream (Content-Type application/connect+...). */
bool agent_request_is_stream(const struct agent_request *r);

/* Next body chunk: 1 with ret_buf and ret_len (valid until the next call), 0 at END, -errno
 * (-EPROTO for a frame out of order). This is the one place that reads body frames. */
int agent_request_read_body(struct agent_request *r, const uint8_t **ret_buf, size_t *ret_len);
/* Whole body into a malloc'd NUL-terminated buffer; -EMSGSIZE past max. */
int agent_request_read_body_all(struct agent_request *r, size_t max, uint8_t **ret,
                                size_t *ret_len);
/* Read and drop the rest of the body (bounded by max bytes; -EMSGSIZE past it). */
int agent_request_discard_body(struct agent_request *r, size_t max);

/* Read a server-stream request body that must be exactly one uncompressed Connect envelope.
 * Returns 0 with *ret_body (caller frees; *ret_msg points into it) and the message; otherwise
 * the request was answered with a stream error (returns that answer's status, > 0) or reading
 * failed (-errno). */
int agent_request_read_envelope(struct agent_request *r, uint8_t **ret_body,
                                const uint8_t **ret_msg, uint32_t *ret_msg_len);

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

/* ---- the answer ---- */

/* headers is a NULL-terminated list of name, value pairs (or NULL). Returns status. */
int agent_respond_head(struct agent_request *r, int status, const char *const *headers);
/* The same with a header array of n entries (any count the head's bounds allow: -EINVAL past
 * them, api/frames.md). */
int agent_respond_head_list(struct agent_request *r, int status, const struct sbx_header *headers,
                            size_t n);
/* One or more DATA frames. 0 or -errno. */
int agent_respond_data(struct agent_request *r, const void *buf, size_t len);
/* END: returns the status of the head sent. */
int agent_respond_end(struct agent_request *r);
/* A whole answer with Content-Length (and Content-Type when not NULL). Returns status. */
int agent_respond(struct agent_request *r, int status, const char *content_type, const void *body,
                  size_t len);
/* A REST error in the shape of the route's API (route->rest_error), by default envd's
 * {"code":status,"message":...} with application/json; charset=utf-8. */
int agent_respond_rest_error(struct agent_request *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Unary Connect error: status mapped from code, {"code":"..","message":".."}. */
int agent_respond_connect_error(struct agent_request *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Streaming Connect error: HTTP 200, application/connect+json, one end-stream envelope
 * carrying the error (sends the head only when it was not sent yet), END. Returns the status of
 * the head (200). */
int agent_respond_stream_error(struct agent_request *r, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Send one Connect envelope (flags + JSON) as a DATA frame. 0 or -errno. */
int agent_respond_envelope(struct agent_request *r, uint8_t flags, const char *json, size_t len);

/* ---- the bodies of those answers (pure; each returns a malloc'd string, or -ENOMEM) ---- */

/* envd's REST error `{"code":404,"message":".."}`, as its jsonError writes it. */
int agent_rest_error_json(int status, const char *message, char **ret, size_t *ret_len);
/* A unary Connect error `{"code":"not_found","message":".."}`. */
int agent_connect_error_json(const char *code, const char *message, char **ret, size_t *ret_len);
/* An end-of-stream message: `{}` when code is NULL, else `{"error":{"code":..,"message":..}}`. */
int agent_end_stream_json(const char *code, const char *message, char **ret, size_t *ret_len);
/* A Connect envelope: flags, BE32 length, the message bytes. */
int agent_connect_envelope(uint8_t flags, const char *msg, size_t msg_len, uint8_t **ret,
                           size_t *ret_len);
