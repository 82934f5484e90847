/* SPDX-License-Identifier: Apache-2.0 */
#include "egress/egress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <nftables/libnftables.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "fd-util.h"
#include "json-util.h"
#include "egress/resolver.h"
#include "egress/tls-proxy.h"
#include "egress/egress-tls.h"
#include "log.h"
#include "macros.h"
#include "rtnl.h"
#include "storage/secret-store.h"

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

struct egress {
        struct server *srv;
        pthread_mutex_t lock; /* the nft context, the table's existence, policies */
        struct nft_ctx *nft;
        bool table;                                  /* made by us and not deleted since */
        unsigned n;                                  /* slots with rules */
        struct net_policy *policy[EGRESS_SLOTS_MAX]; /* by slot, NULL: none */
        struct egress_dns *dns;                      /* started with the table */
        unsigned dns_port;
        struct egress_tls *tls;     /* the sandboxes' CA: egress-tls.h */
        struct egress_proxy *proxy; /* started with the table */
        unsigned proxy_port;
};

int egress_new(struct server *srv, struct egress **ret)
{
        struct egress *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->srv = srv;
        pthread_mutex_init(&e->lock, NULL);
        *ret = e;
        return 0;
}

#define policy_free net_policy_free

void egress_free(struct egress *e)
{
        if (!e)
                return;
        egress_dns_stop(e->dns);
        egress_proxy_stop(e->proxy);
        egress_tls_free(e->tls);
        if (e->nft)
                nft_ctx_free(e->nft);
        for (unsigned i = 0; i < EGRESS_SLOTS_MAX; i++)
                policy_free(e->policy[i]);
        pthread_mutex_destroy(&e->lock);
        free(e);
}

static bool is_all(const struct net_rule *r)
{
        return r->kind != NET_DOMAIN && r->prefix == 0;
}

int egress_effective(const struct sbxd_config *c, const struct net_policy *asked,
                     struct net_policy *ret_eff)
{
        struct net_policy p;
        int r = net_policy_copy(asked, &p);
        if (r < 0)
                return r;
        bool internet = asked->internet < 0 ? c->egress_allow : asked->internet > 0;
        size_t k = 0;
        for (size_t i = 0; i < p.n_allow; i++)
                if (is_all(&p.allow[i]))
                        internet = true;
                else
                        p.allow[k++] = p.allow[i];
        p.n_allow = k;
        k = 0;
        for (size_t i = 0; i < p.n_deny; i++)
                if (is_all(&p.deny[i]))
                        internet = false; /* allow wins: allowOut entries still pass */
                else
                        p.deny[k++] = p.deny[i];
        p.n_deny = k;
        if (c->egress_max != EGRESS_MAX_ANY)
                internet = false;
        if (c->egress_max == EGRESS_MAX_NONE)
                p.n_allow = p.n_deny = 0;
        p.internet = internet;
        *ret_eff = p;
        return internet || p.n_allow > 0;
}

/* One nft transaction; the error text of libnftables into errmsg. Under e->lock. */
static int nft_run(struct egress *e, const char *cmds, char *errmsg, size_t errlen)
{
        if (!e->nft) {
                e->nft = nft_ctx_new(NFT_CTX_DEFAULT);
                if (!e->nft)
                        return -ENOMEM;
                nft_ctx_buffer_output(e->nft);
                nft_ctx_buffer_error(e->nft);
        }
        int r = nft_run_cmd_from_buffer(e->nft, cmds);
        (void)nft_ctx_get_output_buffer(e->nft); /* read, so the next listing starts empty */
        const char *err = nft_ctx_get_error_buffer(e->nft);
        if (r != 0) {
                size_t l = err ? strcspn(err, "\n") : 0;
                if (errmsg)
                        snprintf(errmsg, errlen, "nftables: %.*s", (int)MIN(l, 300),
                                 err ? err : "failed");
                log_debug("nft failed on: %s", cmds);
                return -EIO;
        }
        return 0;
}

static int forwarding_on(void)
{
        int r = write_file("/proc/sys/net/ipv4/ip_forward", "1");
        if (r >= 0)
                r = write_file("/proc/sys/net/ipv6/conf/all/forwarding", "1");
        return r;
}

/* The table and its fixed chains (idempotent: the base chains are flushed and refilled). */
static int base_rules(struct buf *b, unsigned dns_port)
{
        const char *t = "inet " EGRESS_TABLE;
        int r = buf_printf(
            b,
            "add table %1$s\n"
            "add set %1$s blocked4 { type ipv4_addr; flags interval; auto-merge; elements = "
            "{ " EGRESS_BLOCKED4 " }; }\n"
            "add set %1$s blocked6 { type ipv6_addr; flags interval; auto-merge; elements = "
            "{ " EGRESS_BLOCKED6 " }; }\n"
            "add map %1$s outmap { type ifname : verdict; }\n"
            "add map %1$s inmap { type ifname : verdict; }\n"
            "add map %1$s natmap { type ifname : verdict; }\n"
            "add chain %1$s input { type filter hook input priority filter; policy accept; }\n"
            "add chain %1$s forward { type filter hook forward priority filter; policy accept; "
            "}\n"
            "add chain %1$s prerouting { type nat hook prerouting priority dstnat; policy "
            "accept; }\n"
            "add chain %1$s postrouting { type nat hook postrouting priority srcnat; policy "
            "accept; }\n"
            "add chain %1$s to_host\n"
            "flush chain %1$s input\nflush chain %1$s forward\nflush chain %1$s prerouting\n"
            "flush chain %1$s postrouting\nflush chain %1$s to_host\n",
            t);
        if (r < 0)
                return r;
        return buf_printf(
            b,
            "add rule %1$s input iifname \"" EGRESS_IF_PREFIX "*\" jump to_host\n"
            /* the resolver is the sandboxes' alone: nothing else may claim to be one */
            "add rule %1$s input udp dport %2$u drop\n"
            /* the resolver is the sandboxes' alone: nothing else may claim to be one */
            "add rule %1$s input udp dport %2$u drop\n"
            "add rule %1$s to_host ct state established,related accept\n"
            "add rule %1$s to_host icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, "
            "nd-router-solicit } accept\n"
            "add rule %1$s to_host iifname vmap @inmap\n"
            "add rule %1$s to_host " REJECT "\n"
            "add rule %1$s forward oifname \"" EGRESS_IF_PREFIX "*\" ct state "
            "established,related accept\n"
            "add rule %1$s forward oifname \"" EGRESS_IF_PREFIX "*\" drop\n"
            "add rule %1$s forward iifname \"" EGRESS_IF_PREFIX "*\" ct state "
            "established,related accept\n"
            "add rule %1$s forward iifname \"" EGRESS_IF_PREFIX "*\" ct state invalid drop\n"
            "add rule %1$s forward iifname vmap @outmap\n"
            "add rule %1$s forward iifname \"" EGRESS_IF_PREFIX "*\" drop\n"
            "add rule %1$s prerouting iifname \"" EGRESS_IF_PREFIX "*\" udp dport 53 redirect "
            "to :%2$u\n"
            /* transforms: a sandbox's TCP 80/443 its policy allows goes to the proxy */
            "add rule %1$s prerouting iifname vmap @natmap\n"
            "add rule %1$s postrouting ip saddr " EGRESS_NET4 " oifname != \"" EGRESS_IF_PREFIX
            "*\" masquerade\n"
            "add rule %1$s postrouting ip6 saddr " EGRESS_NET6 " oifname != \"" EGRESS_IF_PREFIX
            "*\" masquerade\n",
            t, dns_port);
}

static int hook_lookup(void *arg, int family, const void *addr, struct net_policy *ret)
{
        return egress_lookup(arg, family, addr, ret);
}

static int hook_pin(void *arg, int slot, int family, const void *addrs, size_t n, unsigned ttl_s)
{
        return egress_pin(arg, slot, family, addrs, n, ttl_s);
}

static int dns_start(struct egress *e)
{
        const struct egress_dns_hooks h = {hook_lookup, hook_pin, e};
        return e->dns ? 0 : egress_dns_start(&h, e->srv->config->egress_dns, &e->dns, &e->dns_port);
}

static int hook_secret(void *arg, const char *name, char *buf, size_t size)
{
        struct egress *e = arg;
        return secret_store_value(e->srv->secrets, name, buf, size);
}

static int proxy_start(struct egress *e, char *errmsg, size_t errlen)
{
        if (e->proxy)
                return 0;
        const struct egress_proxy_hooks h = {hook_lookup, hook_secret, e};
        int r = e->tls
                    ? 0
                    : egress_tls_new(e->srv->config->state_dir, e->srv->config->egress_upstream_ca,
                                     &e->tls, errmsg, errlen);
        if (r >= 0 && (r = egress_proxy_start(&h, e->tls, &e->proxy, &e->proxy_port)) < 0)
                snprintf(errmsg, errlen, "egress proxy: %s", strerror(-r));
        return r;
}

int egress_ca_pem(struct egress *e, char **ret)
{
        char err[400] = "";
        pthread_mutex_lock(&e->lock);
        int r = e->tls
                    ? 0
                    : egress_tls_new(e->srv->config->state_dir, e->srv->config->egress_upstream_ca,
                                     &e->tls, err, sizeof(err));
        char *pem = r >= 0 ? strdup(egress_tls_ca_pem(e->tls)) : NULL;
        pthread_mutex_unlock(&e->lock);
        if (r < 0)
                return log_error_errno(r, "%s", err);
        if (!pem)
                return -ENOMEM;
        *ret = pem;
        return 0;
}

/* The table, the forwarding switches, the resolver and the proxy, the first time a sandbox
 * needs them. Under e->lock. */
static int ensure_table(struct egress *e, char *errmsg, size_t errlen)
{
        if (e->table)
                return 0;
        int r;
        if ((r = dns_start(e)) < 0) {
                snprintf(errmsg, errlen, "egress resolver: %s", strerror(-r));
                return r;
        }
        if ((r = proxy_start(e, errmsg, errlen)) < 0)
                return r;
        if ((r = forwarding_on()) < 0) {
                snprintf(errmsg, errlen, "turning IP forwarding on: %s", strerror(-r));
                return r;
        }
        _cleanup_(buf_done) struct buf b = {};
        if ((r = base_rules(&b, e->dns_port)) < 0)
                return r;
        if ((r = nft_run(e, buf_str(&b), errmsg, errlen)) < 0)
                return r;
        e->table = true;
        return 0;
}

static int add_elements(struct buf *b, const char *set, const struct net_rule *rules, size_t n,
                        enum net_kind kind)
{
        bool any = false;
        for (size_t i = 0; i < n; i++) {
                if (rules[i].kind != kind)
                        continue;
                char text[NET_DOMAIN_MAX + 3];
                net_rule_format(&rules[i], text);
                int r = buf_printf(b, "%s%s", any ? ", " : "add element inet " EGRESS_TABLE " ",
                                   any ? text : set);
                if (r >= 0 && !any)
                        r = buf_printf(b, " { %s", text);
                if (r < 0)
                        return r;
                any = true;
        }
        return any ? buf_adds(b, " }\n") : 0;
}

static const char *const slot_sets[] = {"a4", "a6", "d4", "d6", "p4", "p6"};

/* sN's sets and chains exist (idempotent), flushed. */
static int slot_objects(struct buf *b, int slot)
{
        const char *t = "inet " EGRESS_TABLE;
        int r = 0;
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

static int slot_nat_rules(struct buf *b, int slot, const struct net_policy *p, unsigned port);

static int slot_rules(struct buf *b, int slot, const struct net_policy *p, unsigned dns_port,
                      unsigned proxy_port)
{
        struct sbx_jail_egress l;
        char a4[INET_ADDRSTRLEN], a6[INET6_ADDRSTRLEN], name[8];
        egress_link(slot, &l);
        inet_ntop(AF_INET, l.addr4, a4, sizeof(a4));
        inet_ntop(AF_INET6, l.addr6, a6, sizeof(a6));
        int r = 0;
        static const enum net_kind kinds[] = {NET_V4, NET_V6};
        for (unsigned i = 0; i < 2 && r >= 0; i++) {
                snprintf(name, sizeof(name), "s%d_a%c", slot, i ? '6' : '4');
                r = add_elements(b, name, p->allow, p->n_allow, kinds[i]);
                snprintf(name, sizeof(name), "s%d_d%c", slot, i ? '6' : '4');
                if (r >= 0)
                        r = add_elements(b, name, p->deny, p->n_deny, kinds[i]);
        }
        if (r < 0)
                return r;
        /* the order is the policy: docs/e2b-wire.md "Egress" */
        r = buf_printf(
            b,
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
            "add element %1$s natmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d_nat }\n",
            "inet " EGRESS_TABLE, slot, a4, a6, p->internet ? "accept" : REJECT, dns_port);
        return r < 0 ? r : slot_nat_rules(b, slot, p, proxy_port);
}

/* sN_nat, for a sandbox with transforms: its new TCP connections to port 443 that sN
 * would accept (the same sets in the same order) are redirected to the proxy
 * (tls-proxy.h), which then connects from the host; what sN would reject is left alone
 * and rejected there. The proxy's port is open in sN_in only for redirected connections. */
static int slot_nat_rules(struct buf *b, int slot, const struct net_policy *p, unsigned port)
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
                          "inet " EGRESS_TABLE, slot, port, rd, p->internet ? rd : "return");
}

static int set_policy(struct egress *e, int slot, const struct net_policy *p)
{
        struct net_policy *c = calloc(1, sizeof(*c));
        if (!c || net_policy_copy(p, c) < 0) {
                free(c);
                return -ENOMEM;
        }
        if (!e->policy[slot])
                e->n++;
        policy_free(e->policy[slot]);
        e->policy[slot] = c;
        return 0;
}

int egress_apply(struct egress *e, int slot, const struct net_policy *eff, char *errmsg,
                 size_t errlen)
{
        if (slot < 0 || slot >= EGRESS_SLOTS_MAX)
                return -ERANGE;
        _cleanup_(buf_done) struct buf b = {};
        pthread_mutex_lock(&e->lock);
        int r = ensure_table(e, errmsg, errlen);
        if (r >= 0)
                r = slot_objects(&b, slot);
        if (r >= 0)
                r = slot_rules(&b, slot, eff, e->dns_port, e->proxy_port);
        if (r >= 0)
                r = nft_run(e, buf_str(&b), errmsg, errlen);
        if (r == -EIO) {
                /* the table may have gone behind our back (an operator's flush ruleset):
                 * make it again, once, with every sandbox's part (all idempotent) */
                e->table = false;
                r = ensure_table(e, errmsg, errlen);
                for (int i = 0; i < EGRESS_SLOTS_MAX && r >= 0; i++)
                        if (e->policy[i] && i != slot && (r = slot_objects(&b, i)) >= 0)
                                r = slot_rules(&b, i, e->policy[i], e->dns_port, e->proxy_port);
                if (r >= 0)
                        r = nft_run(e, buf_str(&b), errmsg, errlen);
                if (r >= 0)
                        log_warning("egress: table inet " EGRESS_TABLE " was gone; made again");
        }
        if (r >= 0)
                r = set_policy(e, slot, eff);
        pthread_mutex_unlock(&e->lock);
        return r;
}

static int remove_slot_locked(struct egress *e, int slot)
{
        _cleanup_(buf_done) struct buf b = {};
        const char *t = "inet " EGRESS_TABLE;
        /* made first so that the deletes find them, whatever a crash left: one transaction */
        int r = slot_objects(&b, slot);
        if (r >= 0)
                r = buf_printf(
                    &b,
                    "add element %1$s outmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d }\n"
                    "add element %1$s inmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d_in }\n"
                    "add element %1$s natmap { \"" EGRESS_IF_PREFIX "%2$d\" : jump s%2$d_nat }\n"
                    "delete element %1$s outmap { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "delete element %1$s inmap { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "delete element %1$s natmap { \"" EGRESS_IF_PREFIX "%2$d\" }\n"
                    "delete chain %1$s s%2$d\ndelete chain %1$s s%2$d_in\n"
                    "delete chain %1$s s%2$d_nat\n",
                    t, slot);
        for (unsigned i = 0; i < ELEMENTSOF(slot_sets) && r >= 0; i++)
                r = buf_printf(&b, "delete set %s s%d_%s\n", t, slot, slot_sets[i]);
        char err[400];
        if (r >= 0)
                r = nft_run(e, buf_str(&b), err, sizeof(err));
        if (r < 0)
                return log_error_errno(r, "egress: removing the rules of slot %d: %s", slot, err);
        return 0;
}

static int remove_link(int slot)
{
        struct sbx_jail_egress l;
        egress_link(slot, &l);
        _cleanup_close_ int nl = rtnl_open();
        if (nl < 0)
                return nl;
        int r = rtnl_link_del(nl, l.host_if);
        return r == -ENODEV ? 0 : r;
}

int egress_remove(struct egress *e, int slot)
{
        if (slot < 0 || slot >= EGRESS_SLOTS_MAX)
                return -ERANGE;
        int r = remove_link(slot);
        if (r < 0)
                log_warning_errno(r, "egress: deleting " EGRESS_IF_PREFIX "%d: %m", slot);
        pthread_mutex_lock(&e->lock);
        if (e->policy[slot]) {
                int t = e->table ? remove_slot_locked(e, slot) : 0;
                if (t < 0 && r >= 0)
                        r = t;
                policy_free(TAKE_PTR(e->policy[slot]));
                e->n--;
        }
        if (e->table && e->n == 0) { /* the last one: nothing of sbx stays in the kernel */
                char err[400];
                if (nft_run(e, "delete table inet " EGRESS_TABLE "\n", err, sizeof(err)) < 0)
                        log_warning("egress: deleting table inet " EGRESS_TABLE ": %s", err);
                else
                        e->table = false;
        }
        pthread_mutex_unlock(&e->lock);
        return r;
}

int egress_pin(struct egress *e, int slot, int family, const void *addrs, size_t n, unsigned ttl_s)
{
        if (n == 0)
                return 0;
        _cleanup_(buf_done) struct buf b = {};
        int r = buf_printf(&b, "add element inet " EGRESS_TABLE " s%d_p%c { ", slot,
                           family == AF_INET ? '4' : '6');
        size_t len = family == AF_INET ? 4 : 16;
        const uint8_t *at = addrs;
        for (size_t i = 0; i < n && r >= 0; i++) {
                bool dup = false; /* one element once: nft refuses a set listing one twice */
                for (size_t k = 0; k < i && !dup; k++)
                        dup = !memcmp(at + k * len, at + i * len, len);
                char a[INET6_ADDRSTRLEN];
                inet_ntop(family, at + i * len, a, sizeof(a));
                if (!dup)
                        r = buf_printf(&b, "%s%s timeout %us", i ? ", " : "", a, ttl_s);
        }
        if (r >= 0)
                r = buf_adds(&b, " }\n");
        if (r < 0)
                return r;
        pthread_mutex_lock(&e->lock);
        char err[400];
        /* the sandbox may be gone meanwhile: then there is nothing to pin */
        r = e->policy[slot] ? nft_run(e, buf_str(&b), err, sizeof(err)) : -ESRCH;
        pthread_mutex_unlock(&e->lock);
        if (r == -EIO)
                log_warning("egress: pinning for slot %d: %s", slot, err);
        return r;
}

int egress_lookup(struct egress *e, int family, const void *addr, struct net_policy *ret)
{
        int slot = egress_slot_of(family, addr);
        if (slot < 0)
                return -1;
        pthread_mutex_lock(&e->lock);
        int r = e->policy[slot] && net_policy_copy(e->policy[slot], ret) >= 0 ? slot : -1;
        pthread_mutex_unlock(&e->lock);
        return r;
}

/* Does any link of ours exist (ours or another sbxd's on this host)? */
static bool any_link(void)
{
        struct if_nameindex *l = if_nameindex();
        bool found = false;
        for (struct if_nameindex *i = l; i && i->if_index; i++)
                if (!strncmp(i->if_name, EGRESS_IF_PREFIX, strlen(EGRESS_IF_PREFIX)))
                        found = true;
        if (l)
                if_freenameindex(l);
        return found;
}

/* The pinned addresses of the table as it is (JSON listing), as "add element" lines for the
 * slots in keep[], with what is left of their timeouts. Under e->lock. */
static void saved_pins(struct egress *e, const bool *keep, struct buf *out)
{
        nft_ctx_output_set_flags(e->nft, NFT_CTX_OUTPUT_JSON);
        int r = nft_run_cmd_from_buffer(e->nft, "list table inet " EGRESS_TABLE "\n");
        nft_ctx_output_set_flags(e->nft, 0);
        const char *text = nft_ctx_get_output_buffer(e->nft);
        if (r != 0 || !text)
                return;
        _cleanup_json_ cJSON *j = cJSON_Parse(text);
        const cJSON *item;
        cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(j, "nftables"))
        {
                const cJSON *set = cJSON_GetObjectItemCaseSensitive(item, "set");
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(set, "name");
                int slot;
                char fam;
                if (!cJSON_IsString(name) ||
                    sscanf(name->valuestring, "s%d_p%c", &slot, &fam) != 2 || slot < 0 ||
                    slot >= EGRESS_SLOTS_MAX || !keep[slot])
                        continue;
                const cJSON *el;
                cJSON_ArrayForEach(el, cJSON_GetObjectItemCaseSensitive(set, "elem"))
                {
                        const cJSON *in = cJSON_GetObjectItemCaseSensitive(el, "elem");
                        const cJSON *val = cJSON_GetObjectItemCaseSensitive(in, "val");
                        const cJSON *exp = cJSON_GetObjectItemCaseSensitive(in, "expires");
                        unsigned char a[16];
                        if (!cJSON_IsString(val) || !cJSON_IsNumber(exp) || exp->valuedouble < 1 ||
                            inet_pton(fam == '4' ? AF_INET : AF_INET6, val->valuestring, a) != 1)
                                continue;
                        (void)buf_printf(
                            out, "add element inet " EGRESS_TABLE " %s { %s timeout %us }\n",
                            name->valuestring, val->valuestring, (unsigned)exp->valuedouble);
                }
        }
}

int egress_reconcile(struct egress *e, const int *slots, const struct net_policy *const *policy,
                     size_t n)
{
        char err[400] = "";
        int r = 0;
        pthread_mutex_lock(&e->lock);
        if (n == 0) {
                /* leftovers of an earlier run: gone unless another sbxd's links use them */
                if (!any_link())
                        (void)nft_run(e,
                                      "add table inet " EGRESS_TABLE
                                      "\ndelete table inet " EGRESS_TABLE "\n",
                                      err, sizeof(err));
                pthread_mutex_unlock(&e->lock);
                return 0;
        }
        _cleanup_(buf_done) struct buf b = {}, pins = {};
        _cleanup_free_ bool *keep = calloc(EGRESS_SLOTS_MAX, sizeof(bool));
        if (!keep) {
                pthread_mutex_unlock(&e->lock);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                keep[slots[i]] = true;
        r = dns_start(e);
        if (r >= 0) /* before the rules: sN_nat names its port */
                r = proxy_start(e, err, sizeof(err));
        if (r >= 0 && !e->nft) /* a context for the listing */
                (void)nft_run(e, "list tables\n", NULL, 0);
        if (r >= 0)
                r = forwarding_on();
        if (r >= 0 && e->nft)
                saved_pins(e, keep, &pins);
        if (r >= 0)
                r = buf_adds(&b, "add table inet " EGRESS_TABLE "\ndelete table inet " EGRESS_TABLE
                                 "\n");
        if (r >= 0)
                r = base_rules(&b, e->dns_port);
        for (size_t i = 0; i < n && r >= 0; i++) {
                r = slot_objects(&b, slots[i]);
                if (r >= 0)
                        r = slot_rules(&b, slots[i], policy[i], e->dns_port, e->proxy_port);
                if (r >= 0)
                        r = set_policy(e, slots[i], policy[i]);
        }
        if (r >= 0 && pins.len)
                r = buf_adds(&b, buf_str(&pins));
        if (r >= 0)
                r = nft_run(e, buf_str(&b), err, sizeof(err));
        if (r >= 0)
                e->table = true;
        pthread_mutex_unlock(&e->lock);
        if (r < 0)
                return log_error_errno(r, "egress: rebuilding the rules of %zu sandboxes: %m %s", n,
                                       err);
        return 0;
}
