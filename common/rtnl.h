/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A few rtnetlink requests (RFC 3549), enough for a sandbox's veth pair: create the pair with
 * one end in another net namespace, give an interface an address, bring it up, add a default
 * route, delete a link. Each request waits for the kernel's acknowledgement, so an error is
 * the kernel's own (-EEXIST, -ENODEV, ...). The socket belongs to the net namespace the caller
 * was in when it called rtnl_open(): every request acts there.
 */
#pragma once

#include <netinet/in.h>
#include <stdint.h>

/* A NETLINK_ROUTE socket in the caller's current net namespace; fd or -errno. */
int rtnl_open(void);

/* A veth pair: name here, peer_name in the net namespace of peer_netns_fd (an fd of
 * /proc/<pid>/ns/net). -EEXIST when name exists. */
int rtnl_veth_create(int fd, const char *name, const char *peer_name, int peer_netns_fd);

/* Adds addr/prefixlen (AF_INET: 4 bytes, AF_INET6: 16) to ifindex; IPv6 without duplicate
 * address detection (nothing else is on the link), so it is usable at once. */
int rtnl_addr_add(int fd, int ifindex, int family, const void *addr, unsigned prefixlen);

/* Sets IFF_UP on ifindex. */
int rtnl_link_up(int fd, int ifindex);

/* Default route of family via gw (on-link through ifindex) in the main table. */
int rtnl_route_default(int fd, int family, const void *gw, int ifindex);

/* Deletes the link called name (with a veth, its peer goes too). -ENODEV when absent. */
int rtnl_link_del(int fd, const char *name);
