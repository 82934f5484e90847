/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-net.h"

#include "fd-util.h"
#include "jail-error.h"
#include "macros.h"
#include "rtnl.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

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

/* One address per family on ifindex, and the link up. */
static int configure(int nl, int ifindex, const uint8_t *a4, unsigned p4, const uint8_t *a6,
                     unsigned p6)
{
        int r = rtnl_addr_add(nl, ifindex, AF_INET, a4, p4);
        if (r >= 0)
                r = rtnl_addr_add(nl, ifindex, AF_INET6, a6, p6);
        if (r >= 0)
                r = rtnl_link_up(nl, ifindex);
        return r;
}

/* The sandbox end, from a netlink socket opened inside pid's net namespace (we are single
 * threaded: setns there and straight back). */
static int sandbox_end(const struct sbx_jail_egress *e, int child_ns, int host_ns)
{
        if (setns(child_ns, CLONE_NEWNET) < 0)
                return jail_errorf(-errno, "setns into the sandbox's net namespace: %m");
        int nl = rtnl_open();
        unsigned idx = if_nametoindex(SBX_JAIL_SANDBOX_IF);
        int saved = errno;
        if (setns(host_ns, CLONE_NEWNET) < 0) /* cannot stay in the sandbox's namespace */
                return jail_errorf(-errno, "setns back into the host's net namespace: %m");
        _cleanup_close_ int fd = nl;
        if (fd < 0)
                return jail_errorf(fd, "netlink socket in the sandbox: %m");
        if (idx == 0)
                return jail_errorf(-saved, SBX_JAIL_SANDBOX_IF " in the sandbox: %m");
        int r = configure(fd, (int)idx, e->addr4, e->prefix4, e->addr6, e->prefix6);
        if (r >= 0)
                r = rtnl_route_default(fd, AF_INET, e->gw4, (int)idx);
        if (r >= 0)
                r = rtnl_route_default(fd, AF_INET6, e->gw6, (int)idx);
        return r < 0 ? jail_errorf(r, SBX_JAIL_SANDBOX_IF " addresses and routes: %m") : 0;
}

/* The host end: rp_filter 1 (strict: a packet from a source not routed back through this link
 * is dropped, docs/escape-battery.md D), no router advertisements taken from the sandbox. */
static int host_end(int nl, const struct sbx_jail_egress *e)
{
        char path[96];
        snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/rp_filter", e->host_if);
        int r = write_file(path, "1");
        if (r < 0)
                return jail_errorf(r, "%s: %m", path);
        snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/accept_ra", e->host_if);
        if ((r = write_file(path, "0")) < 0)
                return jail_errorf(r, "%s: %m", path);
        unsigned idx = if_nametoindex(e->host_if);
        if (idx == 0)
                return jail_errorf(-errno, "%s: %m", e->host_if);
        r = configure(nl, (int)idx, e->gw4, e->prefix4, e->gw6, e->prefix6);
        return r < 0 ? jail_errorf(r, "%s addresses: %m", e->host_if) : 0;
}

int jail_net_egress(const struct sbx_jail_egress *e, pid_t pid)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
        _cleanup_close_ int child_ns = open(path, O_RDONLY | O_CLOEXEC);
        if (child_ns < 0)
                return jail_errorf(-errno, "open the sandbox's net namespace: %m");
        return jail_net_egress_ns(e, child_ns);
}

int jail_net_egress_ns(const struct sbx_jail_egress *e, int child_ns)
{
        _cleanup_close_ int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (host_ns < 0)
                return jail_errorf(-errno, "open the host's net namespace: %m");
        _cleanup_close_ int nl = rtnl_open();
        if (nl < 0)
                return jail_errorf(nl, "netlink socket: %m");
        int r = rtnl_link_del(nl, e->host_if);
        if (r < 0 && r != -ENODEV)
                return jail_errorf(r, "removing a stale %s: %m", e->host_if);
        r = rtnl_veth_create(nl, e->host_if, SBX_JAIL_SANDBOX_IF, child_ns);
        if (r < 0)
                return jail_errorf(r, "veth %s: %m", e->host_if);
        r = host_end(nl, e);
        if (r >= 0)
                r = sandbox_end(e, child_ns, host_ns);
        if (r < 0)
                (void)rtnl_link_del(nl, e->host_if);
        return r;
}

int jail_net_egress_remove(const struct sbx_jail_egress *e)
{
        _cleanup_close_ int nl = rtnl_open();
        if (nl < 0)
                return nl;
        int r = rtnl_link_del(nl, e->host_if);
        return r == -ENODEV ? 0 : r;
}
