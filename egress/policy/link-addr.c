/* SPDX-License-Identifier: Apache-2.0 */
#include "link-addr.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

void egress_link(int slot, struct sbx_jail_egress *ret)
{
        static const uint8_t net6[6] = EGRESS_NET6_PREFIX;
        struct sbx_jail_egress l = {.prefix4 = 30, .prefix6 = 64};
        snprintf(l.host_if, sizeof(l.host_if), EGRESS_IF_PREFIX "%d", slot);
        unsigned base = (unsigned)slot * 4;
        uint8_t a4[4] = {EGRESS_NET4_A, EGRESS_NET4_B, (uint8_t)(base >> 8), (uint8_t)base};
        memcpy(l.gw4, a4, 4);
        memcpy(l.addr4, a4, 4);
        l.gw4[3] |= 1;
        l.addr4[3] |= 2;
        memcpy(l.gw6, net6, 6);
        l.gw6[6] = (uint8_t)(slot >> 8);
        l.gw6[7] = (uint8_t)slot;
        memcpy(l.addr6, l.gw6, 16);
        l.gw6[15] = 1;
        l.addr6[15] = 2;
        *ret = l;
}

int egress_slot_of(int family, const void *addr)
{
        const uint8_t *a = addr;
        static const uint8_t net6[6] = EGRESS_NET6_PREFIX;
        int slot = -1;
        if (family == AF_INET && a[0] == EGRESS_NET4_A && a[1] == EGRESS_NET4_B && (a[3] & 3) == 2)
                slot = (a[2] << 6) | (a[3] >> 2);
        if (family == AF_INET6 && !memcmp(a, net6, 6))
                slot = (a[6] << 8) | a[7];
        if (slot < 0 || slot >= EGRESS_SLOTS_MAX)
                return -1;
        struct sbx_jail_egress l;
        egress_link(slot, &l);
        if (family == AF_INET6 && memcmp(a, l.addr6, 16) != 0)
                return -1;
        return slot;
}
