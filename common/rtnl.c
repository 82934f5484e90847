/* SPDX-License-Identifier: Apache-2.0 */
#include "rtnl.h"

#include <errno.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "macros.h"

#define RTNL_BUF 1024 /* every request here is a few hundred bytes at most */

struct req {
        struct nlmsghdr *h;
        char buf[RTNL_BUF] __attribute__((aligned(NLMSG_ALIGNTO)));
};

static void req_init(struct req *q, uint16_t type, uint16_t flags, const void *body, size_t len)
{
        memset(q->buf, 0, sizeof(q->buf));
        q->h = (struct nlmsghdr *)q->buf;
        q->h->nlmsg_len = (uint32_t)NLMSG_LENGTH(len);
        q->h->nlmsg_type = type;
        q->h->nlmsg_flags = (uint16_t)(NLM_F_REQUEST | NLM_F_ACK | flags);
        memcpy(NLMSG_DATA(q->h), body, len);
}

/* Appends an attribute; returns it (for nesting) or NULL when the buffer is full. */
static struct rtattr *attr_put(struct req *q, uint16_t type, const void *data, size_t len)
{
        size_t at = NLMSG_ALIGN(q->h->nlmsg_len);
        if (at + RTA_SPACE(len) > sizeof(q->buf))
                return NULL;
        struct rtattr *a = (struct rtattr *)(q->buf + at);
        a->rta_type = type;
        a->rta_len = (unsigned short)RTA_LENGTH(len);
        if (len)
                memcpy(RTA_DATA(a), data, len);
        q->h->nlmsg_len = (uint32_t)(at + RTA_SPACE(len));
        return a;
}

static void attr_end(struct req *q, struct rtattr *nest)
{
        nest->rta_len = (unsigned short)(q->buf + q->h->nlmsg_len - (char *)nest);
}

/* Sends the request and reads the kernel's ack: 0 or its -errno. */
static int req_run(int fd, struct req *q)
{
        static uint32_t seq;
        q->h->nlmsg_seq = ++seq;
        struct sockaddr_nl to = {.nl_family = AF_NETLINK};
        if (sendto(fd, q->buf, q->h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
                return -errno;
        char ans[RTNL_BUF] __attribute__((aligned(NLMSG_ALIGNTO)));
        for (;;) {
                ssize_t n = recv(fd, ans, sizeof(ans), 0);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                for (struct nlmsghdr *h = (struct nlmsghdr *)ans; NLMSG_OK(h, (size_t)n);
                     h = NLMSG_NEXT(h, n)) {
                        if (h->nlmsg_seq != q->h->nlmsg_seq || h->nlmsg_type != NLMSG_ERROR)
                                continue;
                        if (h->nlmsg_len < NLMSG_LENGTH(sizeof(struct nlmsgerr)))
                                return -EPROTO;
                        const struct nlmsgerr *e = NLMSG_DATA(h);
                        return e->error; /* 0 (ack) or -errno */
                }
        }
}

int rtnl_open(void)
{
        int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
        if (fd < 0)
                return -errno;
        struct sockaddr_nl a = {.nl_family = AF_NETLINK};
        if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int put_name(struct req *q, const char *name)
{
        size_t l = strlen(name);
        if (l == 0 || l >= IFNAMSIZ)
                return -EINVAL;
        return attr_put(q, IFLA_IFNAME, name, l + 1) ? 0 : -ENOBUFS;
}

int rtnl_veth_create(int fd, const char *name, const char *peer_name, int peer_netns_fd)
{
        struct req q;
        struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
        req_init(&q, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &ifi, sizeof(ifi));
        int r = put_name(&q, name);
        if (r < 0)
                return r;
        struct rtattr *info = attr_put(&q, IFLA_LINKINFO, NULL, 0);
        struct rtattr *kind = info ? attr_put(&q, IFLA_INFO_KIND, "veth", 5) : NULL;
        struct rtattr *data = kind ? attr_put(&q, IFLA_INFO_DATA, NULL, 0) : NULL;
        struct rtattr *peer = data ? attr_put(&q, VETH_INFO_PEER, &ifi, sizeof(ifi)) : NULL;
        uint32_t nsfd = (uint32_t)peer_netns_fd;
        if (!peer || put_name(&q, peer_name) < 0 ||
            !attr_put(&q, IFLA_NET_NS_FD, &nsfd, sizeof(nsfd)))
                return -ENOBUFS;
        attr_end(&q, peer);
        attr_end(&q, data);
        attr_end(&q, info);
        return req_run(fd, &q);
}

int rtnl_addr_add(int fd, int ifindex, int family, const void *addr, unsigned prefixlen)
{
        size_t len = family == AF_INET ? 4 : 16;
        struct ifaddrmsg ifa = {.ifa_family = (unsigned char)family,
                                .ifa_prefixlen = (unsigned char)prefixlen,
                                .ifa_flags = family == AF_INET6 ? IFA_F_NODAD : 0,
                                .ifa_index = (unsigned)ifindex};
        struct req q;
        req_init(&q, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &ifa, sizeof(ifa));
        if (!attr_put(&q, IFA_LOCAL, addr, len) || !attr_put(&q, IFA_ADDRESS, addr, len))
                return -ENOBUFS;
        return req_run(fd, &q);
}

int rtnl_link_up(int fd, int ifindex)
{
        struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC,
                                .ifi_index = ifindex,
                                .ifi_flags = IFF_UP,
                                .ifi_change = IFF_UP};
        struct req q;
        req_init(&q, RTM_NEWLINK, 0, &ifi, sizeof(ifi));
        return req_run(fd, &q);
}

int rtnl_route_default(int fd, int family, const void *gw, int ifindex)
{
        struct rtmsg rt = {.rtm_family = (unsigned char)family,
                           .rtm_table = RT_TABLE_MAIN,
                           .rtm_protocol = RTPROT_BOOT,
                           .rtm_scope = RT_SCOPE_UNIVERSE,
                           .rtm_type = RTN_UNICAST};
        struct req q;
        uint32_t oif = (uint32_t)ifindex;
        req_init(&q, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &rt, sizeof(rt));
        if (!attr_put(&q, RTA_GATEWAY, gw, family == AF_INET ? 4 : 16) ||
            !attr_put(&q, RTA_OIF, &oif, sizeof(oif)))
                return -ENOBUFS;
        return req_run(fd, &q);
}

int rtnl_link_del(int fd, const char *name)
{
        struct ifinfomsg ifi = {.ifi_family = AF_UNSPEC};
        struct req q;
        req_init(&q, RTM_DELLINK, 0, &ifi, sizeof(ifi));
        int r = put_name(&q, name);
        return r < 0 ? r : req_run(fd, &q);
}
