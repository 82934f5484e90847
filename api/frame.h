/* SPDX-License-Identifier: Apache-2.0 */
/* Agent-channel frames (api/frames.md). All functions return >= 0 or -errno. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SBX_FRAME_HEADER_SIZE 5u
#define SBX_FRAME_MAX_PAYLOAD (256u * 1024u)
#define SBX_FRAME_MAX_HEAD    (64u * 1024u)
#define SBX_HEAD_MAX_STRING   (16u * 1024u)
#define SBX_HEAD_MAX_HEADERS  128u

enum sbx_frame_type {
        SBX_FRAME_REQ_HEAD = 1,
        SBX_FRAME_RESP_HEAD = 2,
        SBX_FRAME_DATA = 3,
        SBX_FRAME_END = 4,
};

/* Internal port used by sbxd's own calls into a sandbox; unreachable from outside. */
#define SBX_PORT_INTERNAL 0
#define SBX_PORT_ENVD     49983
#define SBX_PORT_CODE     49999
/* A user port (any other): the agent's 502 when nothing listens there (api/frames.md). */
#define SBX_HEADER_PORT_ERROR   "Sbx-Port-Error"
#define SBX_PORT_ERROR_NOT_OPEN "not-open"

/* Fields are const so encoders can point at borrowed strings; decoded heads own them (freed
 * by the *_free functions). */
struct sbx_header {
        const char *name;
        const char *value;
};

struct sbx_req_head {
        uint16_t port;
        const char *method;
        const char *path;
        const char *query;
        size_t n_headers;
        struct sbx_header *headers;
};

struct sbx_resp_head {
        uint16_t status;
        size_t n_headers;
        struct sbx_header *headers;
};

/* Encode/validate the 5-byte frame header. parse fails with -EPROTO on an unknown type or
 * -EMSGSIZE on a length past the type's bound (heads: SBX_FRAME_MAX_HEAD, END: 0). */
void sbx_frame_header_encode(uint8_t out[SBX_FRAME_HEADER_SIZE], uint8_t type, uint32_t len);
int sbx_frame_header_parse(const uint8_t in[SBX_FRAME_HEADER_SIZE], uint8_t *ret_type,
                           uint32_t *ret_len);

/* Heads. encode allocates *ret_buf (caller frees). decode fills *ret (free with the matching
 * *_free, which accepts a zeroed struct); on failure *ret is left zeroed. Strings are
 * NUL-terminated copies; an embedded NUL byte is rejected with -EBADMSG. */
int sbx_req_head_encode(const struct sbx_req_head *h, uint8_t **ret_buf, size_t *ret_len);
int sbx_req_head_decode(const uint8_t *buf, size_t len, struct sbx_req_head *ret);
void sbx_req_head_free(struct sbx_req_head *h);
int sbx_resp_head_encode(const struct sbx_resp_head *h, uint8_t **ret_buf, size_t *ret_len);
int sbx_resp_head_decode(const uint8_t *buf, size_t len, struct sbx_resp_head *ret);
void sbx_resp_head_free(struct sbx_resp_head *h);

/* Case-insensitive header lookup; NULL when absent. */
const char *sbx_header_get(const struct sbx_header *h, size_t n, const char *name);

/* Blocking I/O on a stream socket. write sends header+payload (MSG_NOSIGNAL). read fills buf
 * (capacity SBX_FRAME_MAX_PAYLOAD) and returns -EPIPE on a clean EOF before a frame. */
int sbx_frame_write(int fd, uint8_t type, const void *payload, size_t len);
int sbx_frame_read(int fd, uint8_t *ret_type, uint8_t *buf, uint32_t *ret_len);
/* The next frame of a body: 1 with a DATA frame in buf (*ret_len bytes), 0 at its END, -EPROTO
 * for a frame of another type, else sbx_frame_read()'s error. */
int sbx_frame_read_body(int fd, uint8_t *buf, uint32_t *ret_len);
