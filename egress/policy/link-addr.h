/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The addressing plan of sandboxes' egress links (server/egress/README.md "Egress"): a sandbox that
 * may reach the network gets one veth pair named after its uid slot, host end EGRESS_IF_PREFIX
 * "<slot>", and a /30 of EGRESS_NET4 and a /64 of EGRESS_NET6 by slot: .1 and
 * ::1 the host end, .2 and ::2 the sandbox. Both directions are here, so that whoever knows a
 * sandbox by its source address (the resolver, the proxy) and whoever makes its link (sbxd, for
 * the jail spec) read one plan. Pure.
 */
#pragma once

#include <stdint.h>

#include "jail-egress.h"

#define EGRESS_IF_PREFIX "sbxe" /* + the uid slot */
/* 4 addresses per slot (a /30) in 10.200.0.0/16: EGRESS_SLOTS_MAX of them fit. */
#define EGRESS_NET4_A 10
#define EGRESS_NET4_B 200
#define EGRESS_NET4   "10.200.0.0/16"
/* a /64 per slot, its number the 4th group: ::1 the host end, ::2 the sandbox */
#define EGRESS_NET6 "fd73:6278:6567::/48"
#define EGRESS_NET6_PREFIX                                                                         \
        {                                                                                          \
                0xfd, 0x73, 0x62, 0x78, 0x65, 0x67                                                 \
        }
#define EGRESS_SLOTS_MAX 16384 /* slots the plan has addresses for: 65536 / 4 */

/* The link of uid slot slot (0 <= slot < EGRESS_SLOTS_MAX): the jail spec's egress member
 * without its CA. */
void egress_link(int slot, struct sbx_jail_egress *ret);

/* The slot whose sandbox end addr is (family AF_INET or AF_INET6, 4 or 16 bytes), or -1 for an
 * address that is no sandbox's (a host end, another address of the blocks, anything else). */
int egress_slot_of(int family, const void *addr);
