/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the build proxy (egress/serve/build-proxy.h) reads of a build step's connection: an
 * HTTP/1 proxy request head, `CONNECT host:port` or `METHOD http://host[:port]/path`, and the
 * head it sends to the mirror. Pure functions over bounded buffers: everything here is input
 * from a build sandbox. Fuzzed by tests/fuzz/fuzz-build-request.c.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define BUILD_REQUEST_HEAD_MAX 16384 /* bytes of a request head; more is a 431 */
#define BUILD_REQUEST_HOST_MAX 253
#define BUILD_REQUEST_PATH_MAX 2047

enum build_request_kind { BUILD_REQUEST_CONNECT, BUILD_REQUEST_PLAIN };

struct build_request {
        enum build_request_kind kind;
        char method[16];
        char version[16];
        char host[BUILD_REQUEST_HOST_MAX + 1];        /* as the target names it */
        char port[8];                                 /* plain: "80" when the target names none */
        char path[BUILD_REQUEST_PATH_MAX + 1];        /* plain: the origin-form target, "/..." */
        size_t head_len;                              /* through the blank line */
        uint64_t body_len;                            /* its Content-Length, 0 when none */
        char host_header[BUILD_REQUEST_HOST_MAX + 1]; /* its Host's name, lowercase; "": none */
};

/* Length of the request head (through its blank line) at the start of buf, 0 when more bytes
 * are needed, -E2BIG when no head ends within BUILD_REQUEST_HEAD_MAX bytes. */
int build_request_head_len(const char *buf, size_t len);

/* The request of a whole head (head_len bytes, from build_request_head_len). -EINVAL when it is
 * not an HTTP/1 request, or one a mirror could read otherwise than the proxy does (a line not
 * ended by CRLF, a bare CR, a NUL, a folded line, a control byte in the request line); -EPROTO
 * when it is one but not a proxy's (its target not in absolute form, nor CONNECT's authority
 * form); -ENOTSUP for a chunked body (Transfer-Encoding: bodies are proxied by
 * Content-Length only). */
int build_request_parse(const char *head, size_t head_len, struct build_request *ret);

/* The head a plain request is sent on with: "METHOD path VERSION", "Host: <host>" (the
 * mirror's own name, whatever Host the client sent: a CDN that serves the mirror routes by it),
 * the client's headers but Host and the hop-by-hop and proxy ones, "Connection: close" (one
 * request per connection to a mirror). Into out: its length, or -ENOBUFS. */
int build_request_rewrite(const char *head, const struct build_request *rq, char *out, size_t size);

/* The head of the mirror's response as the client gets it: its Connection, Keep-Alive and
 * Proxy-Connection headers dropped, "Connection: close" added (the proxy serves one request
 * per client connection, and the client must not send another on it). head_len bytes through
 * the blank line; into out: its length, -ENOBUFS, or -EINVAL for a head that is not an HTTP/1
 * response with CRLF lines. */
int build_response_rewrite(const char *head, size_t head_len, char *out, size_t size);
