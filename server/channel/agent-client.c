/* SPDX-License-Identifier: Apache-2.0 */
#include "channel/agent-client.h"
#include "channel/agent-req.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "frame.h"
#include "macros.h"

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

int agent_call_internal(const char *sandbox_dir, const char *method, const char *path,
                        const char *body, int deadline_ms)
{
        struct agent_head h;
        struct agent_req_opts o = {.timeout_ms = deadline_ms, .connect_retry_ms = deadline_ms};
        struct buf answer = {};
        agent_head_init(&h, SBX_PORT_INTERNAL, method, path, "", body ? "application/json" : NULL);
        int r = agent_req_call(sandbox_dir, &h.h, body, body ? strlen(body) : 0,
                               AGENT_INTERNAL_MAX_BODY, &o, &answer, NULL, 0);
        buf_done(&answer);
        return r == -EMSGSIZE ? -EPROTO : r;
}
