/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The `egress` member of the jail spec (api/jail-spec.md "Egress"): a sandbox that may reach
 * the network gets one veth pair, host end host_if, sandbox end "eth0", with one IPv4 and one
 * IPv6 address on each side. Absent: loopback only. Filtering and NAT are sbxd's (nftables on
 * the host end); the builder only makes the link.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#define SBX_JAIL_IFNAME_MAX 15 /* IFNAMSIZ - 1 */
#define SBX_JAIL_SANDBOX_IF "eth0"
#define SBX_JAIL_CA_MAX     4096 /* the egress CA's PEM, NUL included */
/* Where the sandbox's CA bundle is (Debian's), to which the jailer appends the egress CA */
#define SBX_JAIL_CA_BUNDLE     "/etc/ssl/certs/ca-certificates.crt"
#define SBX_JAIL_CA_BUNDLE_MAX (8 << 20) /* a larger bundle is not extended */

struct sbx_jail_egress {
        char host_if[SBX_JAIL_IFNAME_MAX + 1]; /* [a-z0-9]{1,15} */
        uint8_t addr4[4], gw4[4];              /* sandbox end, host end */
        unsigned prefix4;                      /* 8..30 */
        uint8_t addr6[16], gw6[16];
        unsigned prefix6; /* 64..126 */
        /* "ca": the egress proxy's CA (PEM), appended to the sandbox's SBX_JAIL_CA_BUNDLE
         * (server/egress/README.md "Credentials"); empty: none */
        char ca_pem[SBX_JAIL_CA_MAX];
};

/* {"host_if","addr4":"A/P","gw4","addr6":"A/P","gw6","ca"?} into o under "egress". -ENOMEM. */
int sbx_jail_egress_encode(cJSON *o, const struct sbx_jail_egress *e);
/* The "egress" member of o: absent or null → *ret NULL; otherwise decoded and checked (both
 * addresses of a family in one prefix, distinct, host_if a valid name). -EINVAL with *msg, or
 * -ENOMEM. */
int sbx_jail_egress_decode(const cJSON *o, struct sbx_jail_egress **ret, const char **msg);
bool sbx_jail_egress_equal(const struct sbx_jail_egress *a, const struct sbx_jail_egress *b);
