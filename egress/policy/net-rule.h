/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One entry of a sandbox's egress lists or a network.rules key (net-policy.h): an IPv4 or
 * IPv6 address or CIDR (host bits cleared), or a domain name ("example.com", "*.example.com":
 * any depth below, not the apex; lowercased). Pure.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define NET_DOMAIN_MAX 253

enum net_kind { NET_V4, NET_V6, NET_DOMAIN };

struct net_rule {
        enum net_kind kind;
        uint8_t addr[16]; /* network address, host bits cleared (4 bytes used for NET_V4) */
        unsigned prefix;  /* 0..32 or 0..128 */
        bool wildcard;    /* "*.name": below name, not name itself */
        char name[NET_DOMAIN_MAX + 1]; /* NET_DOMAIN: lowercase, without "*." */
};

/* "A" or "A/N", IPv4 or IPv6: true when r was filled. */
bool net_cidr_parse(const char *s, struct net_rule *r);
/* A domain entry as allowOut takes it ("example.com", "*.example.com"): true when r was
 * filled. */
bool net_domain_parse(const char *s, struct net_rule *r);
/* One entry's text form, as it was normalised ("10.0.0.0/8", "2001:db8::/32", "*.a.b"). */
void net_rule_format(const struct net_rule *r, char buf[static NET_DOMAIN_MAX + 3]);
/* Does name (lowercase, no trailing dot) match the domain rule r? */
bool net_rule_matches(const struct net_rule *r, const char *name);
