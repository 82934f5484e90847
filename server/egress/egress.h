/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Egress of sandboxes that may reach the network (server/egress/README.md "Egress",
 * docs/e2b-wire.md "Egress"). Such a sandbox gets a veth pair from the jailer (api/jail-egress.h):
 * host end "sbxe<slot>", addresses by uid slot (egress/policy/link-addr.h). Everything else is
 * here, in the nftables table `inet sbx` (libnftables, one transaction per change):
 *
 *   - forward: replies to what a sandbox opened pass (conntrack); anything new towards a
 *     sandbox is dropped (the outside, other sandboxes); a packet from sandbox N goes through
 *     its chain sN: its own source address only, then allowOut's addresses (accept), the
 *     always-blocked ranges (EGRESS_BLOCKED4/6: private, link-local and metadata, loopback,
 *     multicast, ...), the addresses its resolver pinned for allowed domains (accept), denyOut
 *     (reject), and last the internet (accept) or nothing (reject);
 *   - input (the host itself): from a sandbox only neighbour discovery, its DNS to the
 *     resolver and host addresses allowOut lists explicitly;
 *   - nat: DNS (udp 53) from a sandbox goes to the resolver, HTTPS of a sandbox with transforms
 *     to the TLS proxy, the rest is masqueraded.
 * The rule texts are nft-rules.h's.
 *
 * A policy change replaces sN's rules and sets in one transaction: conntrack keeps connections
 * that are open, new ones see the new rules at once; then sbx-egress, which runs the resolver
 * and the proxies (egress-proc.h), is told the new policy before the change returns.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "core/server.h"
#include "egress/egress-proc.h"
#include "egress/policy/link-addr.h"
#include "egress/policy/net-policy.h"

struct egress;

/* No kernel state yet: the table, the sockets and sbx-egress come when a sandbox or a build
 * first needs them. */
int egress_new(struct server *srv, const char *instance, struct egress **ret);
/* Stops sbx-egress; the rules stay for the sandboxes, which keep running. */
void egress_free(struct egress *e);
/* sbx-egress's user (and group): a uid no sandbox has, the first of uid slot slot
 * (lifecycle-net.c takes the slot); egress_user_slot() says which (-1: none). */
void egress_set_user(struct egress *e, int slot, uid_t uid);
int egress_user_slot(struct egress *e);

/* What a sandbox gets from what it asked for, under --egress and --egress-max: eff->internet
 * is 0 or 1; a /0 in allowOut means the internet, in denyOut no internet (the SDK's allTraffic
 * 0.0.0.0/0 stands for IPv6 too); a cap drops what it does not allow. Returns whether the
 * sandbox needs a link at all (internet or a non-empty allowOut), or -ENOMEM. */
int egress_effective(const struct sbxd_config *c, const struct net_policy *asked,
                     struct net_policy *ret_eff);

/* Installs or replaces slot's rules for policy eff (before its jailer runs, and at every
 * change). -errno with the message in errmsg. */
int egress_apply(struct egress *e, int slot, const struct net_policy *eff, char *errmsg,
                 size_t errlen);
/* Removes slot's rules and its host link (teardown); the table goes with the last one. */
int egress_remove(struct egress *e, int slot);

/* After adoption: the table rebuilt for the adopted sandboxes that have a link (policy[i]
 * for slots[i]), their pinned addresses kept, leftovers of sandboxes gone meanwhile removed. */
int egress_reconcile(struct egress *e, const int *slots, const struct net_policy *const *policy,
                     size_t n);

/* Adds addresses answered for an allowed domain to slot's pinned set, for ttl_s seconds (the
 * resolver, before it answers). family AF_INET or AF_INET6, n addresses of 4 or 16 bytes. */
int egress_pin(struct egress *e, int slot, int family, const void *addrs, size_t n, unsigned ttl_s);

/* The sandboxes' CA certificate (PEM, *ret to free), made on first use (egress-ca.h). */
int egress_ca_pem(struct egress *e, char **ret);

/* The slot whose sandbox address addr is (a sandbox's DNS query), or -1; with its policy's
 * copy in *ret (net_policy_done) when >= 0. */
int egress_lookup(struct egress *e, int family, const void *addr, struct net_policy *ret);

/* A template build's proxy (egress/serve/build-proxy.h), run by sbx-egress on a new unix socket
 * at path for the hosts of allow; note gets each refusal for the build's log. */
struct egress_build;
int egress_build_start(struct egress *e, const char *path, char *const *allow, size_t n_allow,
                       egress_proc_note_fn note, void *userdata, struct egress_build **ret);
/* The build is over: its proxy stops, no note comes after this returns. NULL is fine. */
void egress_build_stop(struct egress_build *b);
