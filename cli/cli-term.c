/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sbx sandbox terminal ID`: a WebSocket client (wslay) for /v1/sandboxes/{id}/terminal. The
 * local terminal goes raw while connected; keystrokes are sent as binary messages, the
 * window size as {"type":"resize"} (at start and on SIGWINCH); output is written as it comes;
 * the remote shell's exit code becomes sbx's. Plain http:// URLs only (no TLS).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>
#include <wslay/wslay.h>

#include "cli.h"
#include "macros.h"
#include "ws-socket.h"

struct term {
        struct ws_socket ws;
        int exit_code;
        bool closed;
};

static volatile sig_atomic_t winch = 1;

static void on_winch(int sig)
{
        winch = 1;
}

static int tcp_connect(const char *url, char *host, size_t hostlen, char *port, size_t portlen)
{
        const char *h = strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
        if (!h)
                return -EPROTONOSUPPORT;
        size_t hl = strcspn(h, ":/");
        snprintf(host, hostlen, "%.*s", (int)hl, h);
        snprintf(port, portlen, "%s", h[hl] == ':' ? h + hl + 1 : "80");
        port[strcspn(port, "/")] = 0;
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
        if (getaddrinfo(host, port, &hints, &ai) != 0)
                return -EHOSTUNREACH;
        int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
                close(fd);
                fd = -errno;
        }
        freeaddrinfo(ai);
        return fd < 0 ? (fd == -1 ? -errno : fd) : fd;
}

/* Send the upgrade request and read the answer head; 0 on 101. */
static int handshake(const struct cli *c, int fd, const char *host, const char *port,
                     const char *id)
{
        char req[2048], resp[4096];
        size_t n = 0;
        int l = snprintf(req, sizeof(req),
                         "GET /v1/sandboxes/%s/terminal HTTP/1.1\r\nHost: %s:%s\r\n"
                         "Authorization: Bearer %s\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Key: c2J4LXRlcm1pbmFsLWtleQ==\r\n"
                         "Sec-WebSocket-Version: 13\r\n\r\n",
                         id, host, port, c->key ? c->key : "");
        if (l < 0 || (size_t)l >= sizeof(req) || write(fd, req, (size_t)l) != l)
                return -EIO;
        /* read byte by byte up to the end of the head: nothing past it is consumed */
        while (n + 1 < sizeof(resp)) {
                if (read(fd, resp + n, 1) != 1)
                        return -EPROTO;
                n++;
                resp[n] = 0;
                if (n >= 4 && strcmp(resp + n - 4, "\r\n\r\n") == 0)
                        break;
        }
        if (strncmp(resp, "HTTP/1.1 101", 12) == 0)
                return 0;
        const char *body = strstr(resp, "\r\n\r\n");
        fprintf(stderr, "sbx: terminal refused: %.*s\n", (int)strcspn(resp, "\r"), resp);
        (void)body;
        return -EACCES;
}

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud)
{
        return ws_socket_recv(ctx, &((struct term *)ud)->ws, buf, len);
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *d, size_t len, int flags,
                       void *ud)
{
        return ws_socket_send(ctx, &((struct term *)ud)->ws, d, len);
}

static int genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *ud)
{
        return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
                   void *ud)
{
        struct term *t = ud;
        if (a->opcode == WSLAY_BINARY_FRAME)
                (void)!write(STDOUT_FILENO, a->msg, a->msg_length);
        else if (a->opcode == WSLAY_TEXT_FRAME) {
                cJSON *o = cJSON_ParseWithLength((const char *)a->msg, a->msg_length);
                const cJSON *ec = cJSON_GetObjectItemCaseSensitive(o, "exit_code");
                if (cJSON_IsNumber(ec))
                        t->exit_code = ec->valueint & 255;
                cJSON_Delete(o);
        } else if (a->opcode == WSLAY_CONNECTION_CLOSE)
                t->closed = true;
}

static void send_size(wslay_event_context_ptr ctx)
{
        struct winsize ws;
        char msg[96];
        if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0 || ws.ws_col == 0)
                return;
        int n = snprintf(msg, sizeof(msg), "{\"type\":\"resize\",\"cols\":%u,\"rows\":%u}",
                         ws.ws_col, ws.ws_row);
        struct wslay_event_msg m = {WSLAY_TEXT_FRAME, (const uint8_t *)msg, (size_t)n};
        wslay_event_queue_msg(ctx, &m);
}

static void run(wslay_event_context_ptr ctx, struct term *t)
{
        bool in_open = true;
        while (wslay_event_want_read(ctx) || wslay_event_want_write(ctx)) {
                if (winch) {
                        winch = 0;
                        send_size(ctx);
                }
                struct pollfd p[2] = {{.fd = t->ws.fd, .events = ws_socket_poll_events(ctx)},
                                      {.fd = in_open ? STDIN_FILENO : -1, .events = POLLIN}};
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                if (p[0].revents & (POLLIN | POLLHUP | POLLERR) && wslay_event_recv(ctx) != 0)
                        break;
                if (p[1].revents) {
                        uint8_t buf[4096];
                        ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
                        if (n <= 0) {
                                in_open = false; /* stdin ended: keep reading output */
                        } else {
                                struct wslay_event_msg m = {WSLAY_BINARY_FRAME, buf, (size_t)n};
                                wslay_event_queue_msg(ctx, &m);
                        }
                }
                if (wslay_event_want_write(ctx) && wslay_event_send(ctx) != 0)
                        break;
        }
}

int cli_cmd_terminal(struct cli *c, const char *id)
{
        char host[256], port[16];
        struct term t = {.exit_code = 1};
        struct termios saved, raw;
        bool tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
        t.ws.fd = tcp_connect(c->url, host, sizeof(host), port, sizeof(port));
        if (t.ws.fd < 0) {
                fprintf(stderr, "sbx: cannot connect to %s: %s\n", c->url, strerror(-t.ws.fd));
                return 1;
        }
        if (handshake(c, t.ws.fd, host, port, id) < 0) {
                close(t.ws.fd);
                return 1;
        }
        struct wslay_event_callbacks cb = {.recv_callback = on_recv,
                                           .send_callback = on_send,
                                           .genmask_callback = genmask,
                                           .on_msg_recv_callback = on_msg};
        wslay_event_context_ptr ctx;
        if (wslay_event_context_client_init(&ctx, &cb, &t) != 0) {
                close(t.ws.fd);
                return 1;
        }
        if (tty) {
                raw = saved;
                cfmakeraw(&raw);
                tcsetattr(STDIN_FILENO, TCSANOW, &raw);
                signal(SIGWINCH, on_winch);
        } else
                winch = 0;
        run(ctx, &t);
        if (tty)
                tcsetattr(STDIN_FILENO, TCSANOW, &saved);
        wslay_event_context_free(ctx);
        close(t.ws.fd);
        return t.exit_code;
}
