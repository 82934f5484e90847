/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A sandbox's egress policy as a client states it (docs/e2b-wire.md "Egress"): E2B's
 * allow_internet_access and network.allowOut / denyOut. Pure parsing and checking; what sbxd
 * makes of it (nftables, the resolver) is server/egress/egress.h.
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

#include "net-rule.h"
#include "net-transform.h"

#define NET_RULES_MAX 256 /* entries in allowOut, and in denyOut */

struct net_policy {
        int internet; /* -1: not said (the server's default), 0, 1 */
        struct net_rule *allow, *deny;
        size_t n_allow, n_deny;
        struct net_transform *xf; /* network.rules */
        size_t n_xf;
};

/* From a create body (internet under "allow_internet_access", lists under "network") or a
 * PUT /sandboxes/{id}/network body (all four at the top level): network_key NULL. Fields the
 * egress does not use (allowPublicTraffic, maskRequestHost, httpsPorts) are left alone;
 * egressProxy is refused. rules: {"<domain>": [{"transform": {"headers": {...}}}]}; keys as
 * allowOut's domains ("*.com" allowed, a bare "*" not), header names HTTP tokens other than
 * the framing ones (Host, Content-Length, Transfer-Encoding, Connection, ...), values without
 * CR/LF, secret placeholders "${e2b.secrets.<name>}" well formed, IAM token placeholders
 * refused. On success *ret is filled (net_policy_done); -EINVAL with a message for the
 * client. */
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

/* {"allowOut":[...],"denyOut":[...]} (only the lists that are not empty); NULL on ENOMEM. */
cJSON *net_policy_lists_json(const struct net_policy *p);
/* network.rules as parsed ({"<domain>":[{"transform":{"headers":{...}}}]}), for a record;
 * NULL on ENOMEM. */
cJSON *net_policy_rules_json(const struct net_policy *p);
/* The record form of an effective policy, {"internet", "allowOut"?, "denyOut"?, "rules"?}:
 * what sandbox.json keeps under "egress" and what sbxd tells sbx-egress (api/egress-ctl.md).
 * NULL on ENOMEM. */
cJSON *net_policy_record_json(const struct net_policy *p);
/* A policy from its record form (internet 0 or 1): 0, -EBADMSG when e is not one, -ENOMEM. */
int net_policy_from_record(const cJSON *e, struct net_policy *ret);
/* The transform for host name (lowercase, no trailing dot): an exact key first, else the
 * longest matching wildcard; NULL when none. */
const struct net_transform *net_transform_find(const struct net_policy *p, const char *name);
