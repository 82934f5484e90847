/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A WebSocket (wslay's event API) on a socket: wslay's recv and send callbacks, never blocking
 * (EAGAIN is WSLAY_ERR_WOULDBLOCK, an end or error of the connection
 * WSLAY_ERR_CALLBACK_FAILURE), and the poll events the context waits for. Bytes read before
 * wslay took over (past an HTTP head) are handed to it first. Used by sbxd's terminal
 * (server/native/ws-terminal.c) and the CLI's (cli/cli-term.c); in a library of its own
 * (sbx-common-ws), so that only they link wslay.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <wslay/wslay.h>

struct ws_socket {
        int fd;
        const uint8_t *pending; /* read before wslay took over, not consumed yet */
        size_t pending_len;
};

/* For wslay's callbacks (each calls these with its own ws_socket). */
ssize_t ws_socket_recv(wslay_event_context_ptr ctx, struct ws_socket *ws, uint8_t *buf, size_t len);
ssize_t ws_socket_send(wslay_event_context_ptr ctx, struct ws_socket *ws, const uint8_t *data,
                       size_t len);

/* The events to poll ws->fd for: POLLIN while ctx wants to read, POLLOUT while it has
 * something to write. */
short ws_socket_poll_events(wslay_event_context_ptr ctx);

/* Whether pending bytes wait (poll would not see them): treat the socket as readable. */
static inline bool ws_socket_has_pending(const struct ws_socket *ws)
{
        return ws->pending_len > 0;
}
