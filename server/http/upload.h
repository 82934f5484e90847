/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A streamed request body written to a file as it arrives (a template's copy upload, an image
 * archive): the route's begin opens the file and hands it here, the upload callback is
 * http_upload_data(), the finish reads the outcome from the struct. libmicrohttpd takes no
 * answer mid-body, so a body past the route's maximum, or one whose write failed, is read and
 * dropped (at most HTTP_MAX_DISCARD bytes more, then the connection is cut) and the finish
 * answers it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http/http.h"

struct http_upload {
        int fd;       /* owned: closed with the request */
        uint64_t max; /* at most this many bytes are written */
        uint64_t len; /* bytes received so far (written unless too_large or error) */
        uint64_t discarded;
        bool too_large; /* the body passed max */
        int error;      /* a write failed: -errno */
};

/* Make fd (taken: closed on every path) the target of req's body, at most max bytes; the state
 * hangs off req->state and is freed with the request. 0, or -ENOMEM. */
int http_upload_begin(struct request *req, int fd, uint64_t max);
/* The upload callback of such a route: writes data, or drops it once the body is too large or
 * a write failed. 0, or -EMSGSIZE (cut the connection) past HTTP_MAX_DISCARD dropped bytes. */
int http_upload_data(struct request *req, const char *data, size_t len);
