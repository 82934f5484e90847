/* SPDX-License-Identifier: Apache-2.0 */
#include "channel/agent-client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "macros.h"
#include "time-util.h"

int agent_connect(const char *sandbox_dir, int *ret_fd)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int dirfd = -EBADF;

        if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", sandbox_dir,
                             AGENT_SOCKET_NAME) >= sizeof(sa.sun_path)) {
                dirfd = open(sandbox_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dirfd < 0)
                        return -errno;
                snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dirfd,
                         AGENT_SOCKET_NAME);
        }
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int agent_set_timeouts(int fd, int ms)
{
        struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        return 0;
}

static int send_request(int fd, const char *method, const char *path, const char *body)
{
        struct sbx_header hdr = {"Content-Type", "application/json"};
        struct sbx_req_head h = {
            .port = SBX_PORT_INTERNAL,
            .method = method,
            .path = path,
            .query = "",
            .n_headers = body ? 1 : 0,
            .headers = body ? &hdr : NULL,
        };
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        int r = sbx_req_head_encode(&h, &buf, &len);
        if (r < 0)
                return r;
        r = sbx_frame_write(fd, SBX_FRAME_REQ_HEAD, buf, len);
        for (size_t off = 0, l = body ? strlen(body) : 0; r >= 0 && off < l;) {
                size_t k = MIN(l - off, (size_t)SBX_FRAME_MAX_PAYLOAD);
                r = sbx_frame_write(fd, SBX_FRAME_DATA, body + off, k);
                off += k;
        }
        if (r >= 0)
                r = sbx_frame_write(fd, SBX_FRAME_END, NULL, 0);
        return r;
}

/* RESP_HEAD, then DATA* (discarded, bounded), END. */
static int read_response(int fd)
{
        _cleanup_free_ uint8_t *buf = malloc(SBX_FRAME_MAX_PAYLOAD);
        uint8_t type;
        uint32_t len;
        size_t body = 0;
        if (!buf)
                return -ENOMEM;
        int r = sbx_frame_read(fd, &type, buf, &len);
        if (r < 0)
                return r;
        if (type != SBX_FRAME_RESP_HEAD)
                return -EPROTO;
        struct sbx_resp_head h = {};
        r = sbx_resp_head_decode(buf, len, &h);
        if (r < 0)
                return r;
        int status = h.status;
        sbx_resp_head_free(&h);
        for (;;) {
                r = sbx_frame_read_body(fd, buf, &len);
                if (r <= 0)
                        return r < 0 ? r : status;
                if ((body += len) > 1024 * 1024)
                        return -EPROTO;
        }
}

int agent_call_internal(const char *sandbox_dir, const char *method, const char *path,
                        const char *body, int deadline_ms)
{
        int64_t end = now_ms() + deadline_ms;
        _cleanup_close_ int fd = -EBADF;
        int r;

        for (;;) {
                r = agent_connect(sandbox_dir, &fd);
                if (r >= 0)
                        break;
                if ((r != -ECONNREFUSED && r != -ENOENT && r != -EAGAIN) || now_ms() >= end)
                        return r;
                struct timespec ts = {.tv_nsec = 20 * 1000000L};
                nanosleep(&ts, NULL);
        }
        int64_t left = end - now_ms();
        r = agent_set_timeouts(fd, (int)MAX(left, (int64_t)1000));
        if (r < 0)
                return r;
        r = send_request(fd, method, path, body);
        if (r < 0)
                return r;
        r = read_response(fd);
        if (r == -EAGAIN || r == -EWOULDBLOCK)
                return -ETIMEDOUT;
        return r;
}
