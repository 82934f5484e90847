/* SPDX-License-Identifier: Apache-2.0 */
#include "egress/nft-rules.h"

#include <arpa/inet.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "egress/policy/link-addr.h"
#include "macros.h"

/* Never reachable from a sandbox unless allowOut lists them (docs/e2b-wire.md "Egress"): this
 * network, RFC 1918, shared address space (100.64/10), loopback, link-local with the cloud
 * metadata address 169.254.169.254, IETF protocol assignments, benchmarking, multicast and the
 * reserved block with broadcast. The documentation ranges (192.0.2/24, 198.51.100/24,
 * 203.0.113/24) are left out: nothing routes them on the internet, tests use them. */
#define EGRESS_BLOCKED4                                                                            \
        "0.0.0.0/8, 10.0.0.0/8, 100.64.0.0/10, 127.0.0.0/8, 169.254.0.0/16, 172.16.0.0/12, "       \
        "192.0.0.0/24, 192.168.0.0/16, 198.18.0.0/15, 224.0.0.0/3"
/* unspecified and loopback, IPv4-mapped and NAT64 of local use, discard, ULA, link-local,
 * site-local, multicast */
#define EGRESS_BLOCKED6                                                                            \
        "::/127, ::ffff:0:0/96, 64:ff9b:1::/48, 100::/64, fc00::/7, fe80::/10, fec0::/10, "        \
        "ff00::/8"
#define REJECT "reject with icmpx type admin-prohibited"

void nft_names(const char *instance, struct nft_names *ret)
{
        snprintf(ret->main, sizeof(ret->main), "inet " EGRESS_TABLE "_%s", instance);
        snprintf(ret->keep, sizeof(ret->keep), "inet " EGRESS_TABLE "k_%s", instance);
}

#define MARK_MATCH "meta mark and " EGRESS_MARK " != " EGRESS_MARK

/* The keep table: the instance's links pass nothing that the main table did not see (mark). */
static int keep_rules(struct buf *b, const char *k)
{
        return buf_printf(
            b,
            "add table %1$s\n"
            "add set %1$s links { type ifname; }\n"
            "add chain %1$s forward { type filter hook forward priority filter + 10; policy "
            "accept; }\n"
            "add chain %1$s input { type filter hook input priority filter + 10; policy accept; "
            "}\n"
            "flush chain %1$s forward\nflush chain %1$s input\n"
            "add rule %1$s forward iifname @links " MARK_MATCH " drop\n"
            "add rule %1$s forward oifname @links " MARK_MATCH " drop\n"
            "add rule %1$s input iifname @links " MARK_MATCH " drop\n",
            k);
}

int nft_base_rules(struct buf *b, const struct nft_names *n, unsigned dns_port)
{
        int r = keep_rules(b, n->keep);
        if (r >= 0)
                r = buf_printf(
                    b,
                    /* owned: no other program may change it or flush it; it goes with us */
                    "add table %1$s { flags owner; }\n"
                    "add set %1$s links { type ifname; }\n"
                    "add set %1$s blocked4 { type ipv4_addr; flags interval; auto-merge; "
                    "elements = { " EGRESS_BLOCKED4 " }; }\n"
                    "add set %1$s blocked6 { type ipv6_addr; flags interval; auto-merge; "
                    "elements = { " EGRESS_BLOCKED6 " }; }\n"
                    "add map %1$s outmap { type ifname : verdict; }\n"
                    "add map %1$s inmap { type ifname : verdict; }\n"
                    "add map %1$s natmap { type ifname : verdict; }\n"
                    "add chain %1$s input { type filter hook input priority filter; policy "
                    "accept; }\n"
                    "add chain %1$s forward { type filter hook forward priority filter; policy "
                    "accept; }\n"
                    "add chain %1$s prerouting { type nat hook prerouting priority dstnat; "
                    "policy accept; }\n"
                    "add chain %1$s postrouting { type nat hook postrouting priority srcnat; "
                    "policy accept; }\n"
                    "add chain %1$s to_host\n"
                    "flush chain %1$s input\nflush chain %1$s forward\n"
                    "flush chain %1$s prerouting\nflush chain %1$s postrouting\n"
                    "flush chain %1$s to_host\n",
                    n->main);
        if (r < 0)
                return r;
        return buf_printf(
            b,
            /* seen here: the keep table lets it pass (the first two rules of input, forward) */
            "add rule %1$s input iifname @links meta mark set meta mark or " EGRESS_MARK "\n"
            "add rule %1$s input iifname @links jump to_host\n"
            /* the resolver is the sandboxes' alone: nothing else may claim to be one */
            "add rule %1$s input udp dport %2$u drop\n"
            "add rule %1$s to_host ct state established,related accept\n"
            "add rule %1$s to_host icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, "
            "nd-router-solicit } accept\n"
            "add rule %1$s to_host iifname vmap @inmap\n"
            "add rule %1$s to_host " REJECT "\n"
            "add rule %1$s forward iifname @links meta mark set meta mark or " EGRESS_MARK "\n"
            "add rule %1$s forward oifname @links meta mark set meta mark or " EGRESS_MARK "\n"
            "add rule %1$s forward oifname @links ct state established,related accept\n"
            "add rule %1$s forward oifname @links drop\n"
            "add rule %1$s forward iifname @links ct state established,related accept\n"
            "add rule %1$s forward iifname @links ct state invalid drop\n"
            "add rule %1$s forward iifname vmap @outmap\n"
            "add rule %1$s forward iifname @links drop\n"
            "add rule %1$s prerouting iifname @links udp dport 53 redirect to :%2$u\n"
            /* transforms: a sandbox's TCP 443 its policy allows goes to the proxy */
            "add rule %1$s prerouting iifname vmap @natmap\n"
            "add rule %1$s postrouting iifname @links ip saddr " EGRESS_NET4
            " oifname != @links masquerade\n"
            "add rule %1$s postrouting iifname @links ip6 saddr " EGRESS_NET6
            " oifname != @links masquerade\n",
            n->main, dns_port);
}

static int add_elements(struct buf *b, const char *t, const char *set, const struct net_rule *rules,
                        size_t n, enum net_kind kind)
{
        bool any = false;
        for (size_t i = 0; i < n; i++) {
                if (rules[i].kind != kind)
                        continue;
                char text[NET_DOMAIN_MAX + 3];
                net_rule_format(&rules[i], text);
                int r =
                    any ? buf_printf(b, ", %s", text) : buf_printf(b, "add element %s %s", t, set);
                if (r >= 0 && !any)
                        r = buf_printf(b, " { %s", text);
                if (r < 0)
                        return r;
                any = true;
        }
        return any ? buf_adds(b, " }\n") : 0;
}

static const char *const slot_sets[] = {"a4", "a6", "d4", "d6", "p4", "p6"};

int nft_slot_objects(struct buf *b, const struct nft_names *n, int slot)
{
        const char *t = n->main;
        /* the pins kept across sbxd's restarts, in the keep table (which outlives us) */
        int r = buf_printf(b,
                           "add set %1$s s%2$d_p4 { type ipv4_addr; flags timeout; }\n"
                           "add set %1$s s%2$d_p6 { type ipv6_addr; flags timeout; }\n"
                           "flush set %1$s s%2$d_p4\nflush set %1$s s%2$d_p6\n",
                           n->keep, slot);
        for (unsigned i = 0; i < ELEMENTSOF(slot_sets) && r >= 0; i++) {
                const char *s = slot_sets[i];
                bool v6 = s[1] == '6', pin = s[0] == 'p';
                r = buf_printf(b,
                               "add set %s s%d_%s { type %s; flags %s; %s}\nflush set %s s%d_%s\n",
                               t, slot, s, v6 ? "ipv6_addr" : "ipv4_addr",
                               pin ? "timeout" : "interval", pin ? "" : "auto-merge; ", t, slot, s);
        }
        if (r >= 0)
                r = buf_printf(b,
                               "add chain %1$s s%2$d\nadd chain %1$s s%2$d_in\n"
                               "add chain %1$s s%2$d_nat\n"
                               "flush chain %1$s s%2$d\nflush chain %1$s s%2$d_in\n"
                               "flush chain %1$s s%2$d_nat\n",
                               t, slot);
        return r;
}

static int slot_nat_rules(struct buf *b, const char *t, int slot, const struct net_policy *p,
                          unsigned port);

int nft_slot_rules(struct buf *b, const struct nft_names *n, int slot, const struct net_policy *p,
                   unsigned dns_port, unsigned proxy_port)
{
        const char *t = n->main;
        struct sbx_jail_egress l;
        char a4[INET_ADDRSTRLEN], a6[INET6_ADDRSTRLEN], name[8];
        egress_link(slot, &l);
        inet_ntop(AF_INET, l.addr4, a4, sizeof(a4));
        inet_ntop(AF_INET6, l.addr6, a6, sizeof(a6));
        int r = 0;
        static const enum net_kind kinds[] = {NET_V4, NET_V6};
        for (unsigned i = 0; i < 2 && r >= 0; i++) {
                snprintf(name, sizeof(name), "s%d_a%c", slot, i ? '6' : '4');
                r = add_elements(b, t, name, p->allow, p->n_allow, kinds[i]);
                snprintf(name, sizeof(name), "s%d_d%c", slot, i ? '6' : '4');
                if (r >= 0)
                        r = add_elements(b, t, name, p->deny, p->n_deny, kinds[i]);
        }
        if (r < 0)
                return r;
        /* the order is the policy: docs/e2b-wire.md "Egress" */
        r = buf_printf(b,
                       "add rule %1$s s%2$d ip saddr != %3$s drop\n"
                       "add rule %1$s s%2$d ip6 saddr != %4$s drop\n"
                       "add rule %1$s s%2$d ip daddr @s%2$d_a4 accept\n"
                       "add rule %1$s s%2$d ip6 daddr @s%2$d_a6 accept\n"
                       "add rule %1$s s%2$d ip daddr @blocked4 " REJECT "\n"
                       "add rule %1$s s%2$d ip6 daddr @blocked6 " REJECT "\n"
                       "add rule %1$s s%2$d ip daddr @s%2$d_p4 accept\n"
                       "add rule %1$s s%2$d ip6 daddr @s%2$d_p6 accept\n"
                       "add rule %1$s s%2$d ip daddr @s%2$d_d4 " REJECT "\n"
                       "add rule %1$s s%2$d ip6 daddr @s%2$d_d6 " REJECT "\n"
                       "add rule %1$s s%2$d %5$s\n"
                       "add rule %1$s s%2$d_in ip saddr != %3$s drop\n"
                       "add rule %1$s s%2$d_in ip6 saddr != %4$s drop\n"
                       "add rule %1$s s%2$d_in udp dport %6$u accept\n"
                       "add rule %1$s s%2$d_in ip daddr @s%2$d_a4 accept\n"
                       "add rule %1$s s%2$d_in ip6 daddr @s%2$d_a6 accept\n"
                       "add element %1$s outmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d }\n"
                       "add element %1$s inmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d_in }\n"
                       "add element %1$s natmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d_nat }\n"
                       "add element %1$s links { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                       "add element %7$s links { \"" EGRESS_IF_PREFIX "%2$d\" }\n",
                       t, slot, a4, a6, p->internet ? "accept" : REJECT, dns_port, n->keep);
        return r < 0 ? r : slot_nat_rules(b, t, slot, p, proxy_port);
}

/* sN_nat, for a sandbox with transforms: its new TCP connections to port 443 that sN
 * would accept (the same sets in the same order) are redirected to the proxy
 * (tls-proxy.h), which then connects from the host; what sN would reject is left alone
 * and rejected there. The proxy's port is open in sN_in only for redirected connections. */
static int slot_nat_rules(struct buf *b, const char *t, int slot, const struct net_policy *p,
                          unsigned port)
{
        if (p->n_xf == 0 || port == 0)
                return 0;
        char rd[48];
        snprintf(rd, sizeof(rd), "tcp dport 443 redirect to :%u", port);
        return buf_printf(b,
                          "add rule %1$s s%2$d_in ct status dnat tcp dport %3$u accept\n"
                          /* the host's own addresses are sN_in's, never the proxy's */
                          "add rule %1$s s%2$d_nat fib daddr type local return\n"
                          "add rule %1$s s%2$d_nat ip daddr @s%2$d_a4 %4$s\n"
                          "add rule %1$s s%2$d_nat ip6 daddr @s%2$d_a6 %4$s\n"
                          "add rule %1$s s%2$d_nat ip daddr @blocked4 return\n"
                          "add rule %1$s s%2$d_nat ip6 daddr @blocked6 return\n"
                          "add rule %1$s s%2$d_nat ip daddr @s%2$d_p4 %4$s\n"
                          "add rule %1$s s%2$d_nat ip6 daddr @s%2$d_p6 %4$s\n"
                          "add rule %1$s s%2$d_nat ip daddr @s%2$d_d4 return\n"
                          "add rule %1$s s%2$d_nat ip6 daddr @s%2$d_d6 return\n"
                          "add rule %1$s s%2$d_nat %5$s\n",
                          t, slot, port, rd, p->internet ? rd : "return");
}

int nft_slot_remove(struct buf *b, const struct nft_names *n, int slot)
{
        int r = nft_slot_objects(b, n, slot);
        if (r >= 0)
                r = buf_printf(
                    b,
                    "add element %1$s outmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d }\n"
                    "add element %1$s inmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d_in }\n"
                    "add element %1$s natmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d_nat }\n"
                    "add element %1$s links { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "add element %3$s links { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "delete element %1$s outmap { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "delete element %1$s inmap { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "delete element %1$s natmap { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "delete element %1$s links { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "delete element %3$s links { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "delete chain %1$s s%2$d\ndelete chain %1$s s%2$d_in\n"
                    "delete chain %1$s s%2$d_nat\n"
                    "delete set %3$s s%2$d_p4\ndelete set %3$s s%2$d_p6\n",
                    n->main, slot, n->keep);
        for (unsigned i = 0; i < ELEMENTSOF(slot_sets) && r >= 0; i++)
                r = buf_printf(b, "delete set %s s%d_%s\n", n->main, slot, slot_sets[i]);
        return r;
}

/* One "add element" line of n addresses into table t's pinned set of slot. */
static int pin_line(struct buf *b, const char *t, int slot, int family, const void *addrs, size_t n,
                    unsigned ttl_s)
{
        int r = buf_printf(b, "add element %s s%d_p%c { ", t, slot, family == AF_INET ? '4' : '6');
        size_t len = family == AF_INET ? 4 : 16;
        const uint8_t *at = addrs;
        for (size_t i = 0; i < n && r >= 0; i++) {
                bool dup = false; /* one element once: nft refuses a set listing one twice */
                for (size_t k = 0; k < i && !dup; k++)
                        dup = !memcmp(at + k * len, at + i * len, len);
                char a[INET6_ADDRSTRLEN];
                inet_ntop(family, at + i * len, a, sizeof(a));
                if (!dup)
                        r = buf_printf(b, "%s%s timeout %us", i ? ", " : "", a, ttl_s);
        }
        return r < 0 ? r : buf_adds(b, " }\n");
}

int nft_pin(struct buf *b, const struct nft_names *n, int slot, int family, const void *addrs,
            size_t count, unsigned ttl_s)
{
        int r = pin_line(b, n->main, slot, family, addrs, count, ttl_s);
        return r < 0 ? r : pin_line(b, n->keep, slot, family, addrs, count, ttl_s);
}
