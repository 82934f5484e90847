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
/* network.rules (request transforms): domains, rules per domain, headers per domain (after the
 * rules of one domain are applied in order), a header name, a value, all headers of a domain */
#define NET_TRANSFORM_DOMAINS   64
#define NET_TRANSFORM_RULES     16
#define NET_TRANSFORM_HEADERS   32
#define NET_TRANSFORM_NAME_MAX  64
#define NET_TRANSFORM_VALUE_MAX 8192
#define NET_TRANSFORM_TOTAL_MAX 16384
#define NET_SECRET_PLACEHOLDER  "${e2b.secrets."

enum net_kind { NET_V4, NET_V6, NET_DOMAIN };

struct net_rule {
        enum net_kind kind;
        uint8_t addr[16]; /* network address, host bits cleared (4 bytes used for NET_V4) */
        unsigned prefix;  /* 0..32 or 0..128 */
        bool wildcard;    /* "*.name": below name, not name itself */
        char name[NET_DOMAIN_MAX + 1]; /* NET_DOMAIN: lowercase, without "*." */
};

/* One domain key of network.rules: the headers its rules set, in order (a later rule's header
 * replaces an earlier one of the same name, case-insensitively). */
struct net_transform {
        struct net_rule domain; /* NET_DOMAIN */
        cJSON *headers;         /* object of strings, owned; values may hold secret placeholders */
};

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

/* One entry's text form, as it was normalised ("10.0.0.0/8", "2001:db8::/32", "*.a.b"). */
void net_rule_format(const struct net_rule *r, char buf[static NET_DOMAIN_MAX + 3]);
/* {"allowOut":[...],"denyOut":[...]} (only the lists that are not empty); NULL on ENOMEM. */
cJSON *net_policy_lists_json(const struct net_policy *p);
/* network.rules as parsed ({"<domain>":[{"transform":{"headers":{...}}}]}), for a record;
 * NULL on ENOMEM. */
cJSON *net_policy_rules_json(const struct net_policy *p);
/* The transform for host name (lowercase, no trailing dot): an exact key first, else the
 * longest matching wildcard; NULL when none. */
const struct net_transform *net_transform_find(const struct net_policy *p, const char *name);

/* A domain entry as allowOut takes it ("example.com", "*.example.com"): true when r was
 * filled. */
bool net_domain_parse(const char *s, struct net_rule *r);

/* network.rules (net-transform.c): NULL or null is none; -EINVAL with *ret_msg. */
int net_transforms_parse(const cJSON *rules, struct net_transform **ret, size_t *ret_n,
                         const char **ret_msg);
int net_transforms_copy(const struct net_transform *xf, size_t n, struct net_transform **ret);
void net_transforms_free(struct net_transform *xf, size_t n);

/* Does name (lowercase, no trailing dot) match the domain rule r? */
bool net_rule_matches(const struct net_rule *r, const char *name);
