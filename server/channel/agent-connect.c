/* SPDX-License-Identifier: Apache-2.0 */
#include "channel/agent-connect.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

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
