/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The HTTP/1.1 the agent speaks to a server listening on a port inside the sandbox
 * (port/relay.h): writing the request head it got in a REQ_HEAD, reading the server's response
 * head, and decoding a chunked response body. Pure functions, no I/O (unit-tested in
 * tests/unit/agent/test-agent-port.c).
 *
 * Everything the in-sandbox server sends is read here, in the sandbox: sbxd gets a RESP_HEAD
 * and DATA frames, never the server's bytes as HTTP (api/frames.md, "User ports").
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "frame.h"

#define PORT_MAX_RESP_HEAD    (64u * 1024u) /* the server's status line and headers */
#define PORT_MAX_RESP_HEADERS SBX_HEAD_MAX_HEADERS
#define PORT_MAX_CHUNK_LINE   4096u /* a chunk-size line with extensions, or a trailer line */

/* How the request body travels to the server. */
enum port_req_body {
        PORT_REQ_NONE,    /* no body (nothing after the head until an upgrade) */
        PORT_REQ_LENGTH,  /* Content-Length: the DATA bytes as they are */
        PORT_REQ_CHUNKED, /* Transfer-Encoding: chunked: each DATA frame is one chunk */
};

/*
 * The request head for h (its headers, minus hop-by-hop ones; Host is among them) with
 * `Connection: close`, or `Connection: Upgrade` and h's `Upgrade` value when upgrade is true.
 * The body mode follows h: Content-Length, else Transfer-Encoding (sent as chunked), else none.
 * -EINVAL when a string holds CR, LF or NUL or the method or path holds a space (a request
 * cannot be split or smuggled through the head).
 */
int port_req_head_build(const struct sbx_req_head *h, bool upgrade, struct buf *out,
                        enum port_req_body *ret_body);

/* How the response body is delimited. */
enum port_resp_body {
        PORT_RESP_NONE,    /* HEAD, 1xx, 204, 304: no body */
        PORT_RESP_LENGTH,  /* Content-Length */
        PORT_RESP_CHUNKED, /* Transfer-Encoding: chunked */
        PORT_RESP_CLOSE,   /* until the server closes (also everything after a 101) */
};

struct port_resp {
        int status;
        size_t n_headers;
        struct sbx_header headers[PORT_MAX_RESP_HEADERS]; /* into the parsed buffer */
        enum port_resp_body body;
        uint64_t length; /* PORT_RESP_LENGTH */
};

/* Length of the head at the start of buf (through its empty line), 0 when it is not complete
 * yet. */
size_t port_resp_head_end(const char *buf, size_t len);
/*
 * Parse the head buf[0..len) (len from port_resp_head_end()) in place (NULs are written into
 * it; ret's strings point into it). head_request: the request was HEAD. -EPROTO for anything
 * that is not an HTTP/1.x status line and `name: value` lines, a status outside 100..599,
 * more than PORT_MAX_RESP_HEADERS headers, or conflicting/invalid Content-Length.
 */
int port_resp_parse(char *buf, size_t len, bool head_request, struct port_resp *ret);
/* Whether a response header is passed on to sbxd (hop-by-hop ones are not; Upgrade is, on a
 * 101; Content-Length only for PORT_RESP_LENGTH). */
bool port_resp_header_forwarded(const struct port_resp *r, const char *name);

/* A chunked body decoder. Zero-initialise. */
struct port_chunked {
        int state;
        uint64_t left;  /* bytes left in the current chunk */
        size_t line;    /* bytes of the current size/trailer line */
        bool has_digit; /* the size line had a hex digit */
};

/*
 * Decode buf[0..len) in place: the chunk data found in it is moved to its front and
 * *ret_out says how much. Returns 1 once the last chunk and the trailers are complete (bytes
 * after that are ignored), 0 when more input is needed, -EPROTO for a malformed body.
 */
int port_chunked_decode(struct port_chunked *c, uint8_t *buf, size_t len, size_t *ret_out);
