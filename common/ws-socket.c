/* SPDX-License-Identifier: Apache-2.0 */
#include "ws-socket.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>

#include "macros.h"

ssize_t ws_socket_recv(wslay_event_context_ptr ctx, struct ws_socket *ws, uint8_t *buf, size_t len)
{
        if (ws->pending_len > 0) {
                size_t k = MIN(len, ws->pending_len);
                memcpy(buf, ws->pending, k);
                ws->pending += k;
                ws->pending_len -= k;
                return (ssize_t)k;
        }
        ssize_t n = recv(ws->fd, buf, len, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        if (n <= 0) {
                wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
        }
        return n;
}

ssize_t ws_socket_send(wslay_event_context_ptr ctx, struct ws_socket *ws, const uint8_t *data,
                       size_t len)
{
        ssize_t n = send(ws->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        if (n < 0) {
                wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
        }
        return n;
}

short ws_socket_poll_events(wslay_event_context_ptr ctx)
{
        return (short)((wslay_event_want_read(ctx) ? POLLIN : 0) |
                       (wslay_event_want_write(ctx) ? POLLOUT : 0));
}
