/* SPDX-License-Identifier: Apache-2.0 */
#include "loop-util.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "macros.h"

int loop_attach(int img_fd, char *ret_dev, size_t len, int *ret_fd)
{
        _cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        if (ctl < 0)
                return -errno;
        struct loop_config cfg = {
            .fd = (uint32_t)img_fd,
            .info = {.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO},
        };
        if (flock(ctl, LOCK_EX) < 0)
                return -errno;
        for (int attempt = 0; attempt < LOOP_ATTACH_ATTEMPTS; attempt++) {
                int n = ioctl(ctl, LOOP_CTL_GET_FREE);
                if (n < 0)
                        return -errno;
                snprintf(ret_dev, len, "/dev/loop%d", n);
                _cleanup_close_ int lfd = open(ret_dev, O_RDWR | O_CLOEXEC);
                if (lfd < 0)
                        return -errno;
                if (ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
                        if (errno == EBUSY) /* another attacher took it first */
                                continue;
                        return -errno;
                }
                *ret_fd = TAKE_FD(lfd); /* configured: the device is ours (ctl's flock goes) */
                return 0;
        }
        return -EBUSY;
}
