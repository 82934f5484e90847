/* SPDX-License-Identifier: Apache-2.0 */
/* Relaying one HTTP request to a sandbox agent over the frame channel (api/frames.md): the
 * parts shared by the sandbox proxy (e2b/proxy.c) and the v1 relay (native/v1-relay.c). */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "frame.h"

/* Response body reader state; owned by the MHD response once handed to it. */
struct relay_stream {
        int fd, client_fd;
        uint8_t *buf; /* SBX_FRAME_MAX_PAYLOAD bytes */
        uint32_t len, off;
        uint64_t expected, sent;  /* expected = MHD_SIZE_UNKNOWN when chunked */
        bool count_proxy_bytes;   /* feed stats_count_proxy_bytes() */
        const volatile int *stop; /* NULL, or a flag that makes waits give up once set */
};

/* The HTTP client's socket for a connection (polled for hangup only), -1 when unknown. */
int relay_client_fd(struct MHD_Connection *conn);

/* Wait until the agent fd is readable. -ECONNABORTED when the client (client_fd, ignored when
 * < 0) went away or *stop (may be NULL) is set; other -errno from poll. */
int relay_wait_agent(int fd, int client_fd, const volatile int *stop);

/* Forward a request-body chunk as DATA frames. The agent may answer before reading everything
 * (api/frames.md): once its response is waiting (or the socket stays full for timeout_ms) this
 * stops with -ECANCELED instead of blocking; a failed write returns its -errno. The caller
 * stops uploading after any error. count: feed stats_count_proxy_bytes() with what was sent. */
int relay_upload(int fd, const char *data, size_t len, int timeout_ms, bool count);

/* A stream reading the agent's answer on *fd. Takes *fd (sets it to -EBADF) on success only;
 * -ENOMEM otherwise. */
int relay_stream_new(int *fd, int client_fd, bool count, const volatile int *stop,
                     struct relay_stream **ret);

/* Close the agent fd and free the stream; MHD's free callback. NULL-safe. */
void relay_stream_free(void *cls);

/* Wait for and decode the RESP_HEAD frame. -ECONNABORTED as relay_wait_agent(), -EPROTO on
 * another frame, else the read's or decode's -errno. *ret is written on success only and then
 * owned by the caller (sbx_resp_head_free()). */
int relay_read_head(struct relay_stream *st, struct sbx_resp_head *ret);

/* MHD content-reader callback streaming DATA frames to the client until END; a body that does
 * not match st->expected ends with an error. */
ssize_t relay_stream_read(void *cls, uint64_t pos, char *out, size_t max);

/* Content-Length from the agent's head, MHD_SIZE_UNKNOWN when absent; -EPROTO when invalid. */
int relay_content_length(const struct sbx_resp_head *h, uint64_t *ret);
