/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streaming multipart/form-data parser (RFC 7578 / RFC 2046 §5.1). Bytes are fed in chunks
 * of any size (1 byte is fine); the parser never holds more than one header line (bounded)
 * and the partially matched delimiter, so bodies of any size stream through. Part bodies are
 * handed to the callbacks as they are recognised. No I/O, no logging.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define MULTIPART_MAX_BOUNDARY    200u
#define MULTIPART_MAX_HEADER_LINE (8u * 1024u)
#define MULTIPART_MAX_HEADERS     64u

struct multipart_callbacks {
        /* A part's headers are complete. name/filename come from Content-Disposition and may
         * be NULL; they are only valid during the call. */
        int (*part_begin)(void *userdata, const char *name, const char *filename);
        /* Body bytes of the current part (never called with len 0). */
        int (*part_data)(void *userdata, const uint8_t *buf, size_t len);
        /* The current part's body ended (its closing delimiter was seen). */
        int (*part_end)(void *userdata);
};

struct multipart_parser;

/* Create a parser for boundary. -EINVAL for an empty, too long or CR/LF-containing boundary.
 * The callbacks and userdata must outlive the parser. */
int multipart_parser_new(const char *boundary, const struct multipart_callbacks *cb, void *userdata,
                         struct multipart_parser **ret);
void multipart_parser_free(struct multipart_parser *p);
void multipart_parser_freep(struct multipart_parser **p);

/* Feed body bytes. Returns 0, -EBADMSG for malformed input, or a callback's negative value
 * (which is sticky: later calls return it again). */
int multipart_parser_feed(struct multipart_parser *p, const uint8_t *buf, size_t len);

/* The body ended. Returns 0 when the closing delimiter was seen, -EBADMSG otherwise (a truncated
 * body: the current part got no part_end). */
int multipart_parser_finish(struct multipart_parser *p);
