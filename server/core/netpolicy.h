/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's egress policy as a client states it (docs/e2b-wire.md "Egress"): E2B's
 * allow_internet_access and network.allowOut / denyOut. Pure parsing and checking; what sbxd
 * makes of it (nftables, the resolver) is server/lifecycle/egress.h.
 *
 * allowOut entries are IPv4 or IPv6 addresses, CIDRs, or domain names ("example.com",
 * "*.example.com": any depth below, not the apex); denyOut entries are addresses and CIDRs
 * only, as in E2B. A CIDR's host bits are cleared. Domain names are lowercased.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NET_RULES_MAX  256 /* entries in allowOut, and in denyOut */
#define NET_DOMAIN_MAX 253

enum net_kind { NET_V4, NET_V6, NET_DOMAIN };

struct net_rule {
        enum net_kind kind;
        uint8_t addr[16]; /* network address, host bits cleared (4 bytes used for NET_V4) */
        unsigned prefix;  /* 0..32 or 0..128 */
        bool wildcard;    /* "*.name": below name, not name itself */
        char name[NET_DOMAIN_MAX + 1]; /* NET_DOMAIN: lowercase, without "*." */
};

struct net_policy {
        int internet; /* -1: not said (the server's default), 0, 1 */
        struct net_rule *allow, *deny;
        size_t n_allow, n_deny;
};

/* From a create body (internet under "allow_internet_access", lists under "network") or a
 * PUT /sandboxes/{id}/network body (all three at the top level): network_key NULL. Fields the
 * egress does not use (allowPublicTraffic, maskRequestHost, httpsPorts) are left alone;
 * egressProxy and non-empty rules are refused, as E2B's open-source build refuses them. On
 * success *ret is filled (net_policy_done); -EINVAL with a message for the client. */
int net_policy_parse(const cJSON *body, const char *network_key, struct net_policy *ret,
                     const char **ret_msg);
void net_policy_done(struct net_policy *p);
/* net_policy_done and free of a heap policy; NULL is fine. */
void net_policy_free(struct net_policy *p);
static inline void net_policy_freep(struct net_policy **p)
{
        net_policy_free(*p);
}
#define _cleanup_net_policy_ __attribute__((cleanup(net_policy_freep)))
int net_policy_copy(const struct net_policy *p, struct net_policy *ret);

/* One entry's text form, as it was normalised ("10.0.0.0/8", "2001:db8::/32", "*.a.b"). */
void net_rule_format(const struct net_rule *r, char buf[static NET_DOMAIN_MAX + 3]);
/* {"allowOut":[...],"denyOut":[...]} (only the lists that are not empty); NULL on ENOMEM. */
cJSON *net_policy_lists_json(const struct net_policy *p);

/* Does name (lowercase, no trailing dot) match the domain rule r? */
bool net_rule_matches(const struct net_rule *r, const char *name);
