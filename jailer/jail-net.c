/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-net.h"

#include "macros.h"

#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

int jail_net_loopback_up(void)
{
        _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        struct ifreq ifr = {0};
        strncpy(ifr.ifr_name, "lo", sizeof(ifr.ifr_name) - 1);
        if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
                return -errno;
        if (ifr.ifr_flags & IFF_UP)
                return 0;
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
                return -errno;
        return 0;
}
