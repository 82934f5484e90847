/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The framing rules of an HTTP/1.1 request head (RFC 9112 6.3), checked before any body byte
 * is read: on the raw head by the front door's gate (front/gate.c) for a connection's first
 * request, on libmicrohttpd's parsed headers (front/front.c) for the requests after it.
 *
 *   - Content-Length together with Transfer-Encoding: 400 (request smuggling), connection
 *     closed;
 *   - a transfer coding other than a single "chunked": 501, connection closed;
 *   - a Content-Length that is not digits, or several that differ: 400;
 *   - (raw heads only) a request line that is not "METHOD SP target SP HTTP/1.x": 400.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The verdict on one head: status 0 when it is acceptable. */
struct http_framing {
        bool has_cl, cl_bad, has_te, te_unsupported;
        uint64_t cl;
        unsigned status;     /* 0, 400 or 501 once http_framing_verdict() ran */
        const char *message; /* why, for the error body */
};

/* Feed one header (name and value as received, not NUL-terminated). */
void http_framing_header(struct http_framing *f, const char *name, size_t name_len,
                         const char *value, size_t value_len);
/* Decide after the last header: returns f->status (0: acceptable). */
unsigned http_framing_verdict(struct http_framing *f);

/* Where a head ends in buf: the length up to and including its blank line ("\r\n\r\n", or
 * "\n\n" from a client that ends lines with a bare LF), 0 when it is not complete yet. */
size_t http_head_length(const char *buf, size_t len);

/* A complete raw head (as http_head_length() measured it): its request line and headers
 * checked. Returns the status (0: acceptable) and sets *ret_message. */
unsigned http_framing_check_head(const char *head, size_t len, const char **ret_message);
