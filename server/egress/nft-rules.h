/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The text of sbxd's nftables commands for sandboxes' egress (server/egress/README.md "Egress"),
 * one function per part, appended to a buffer that egress.c runs as one libnftables transaction.
 * Pure: no I/O. Each sbxd has two tables of its own, named after its instance
 * (core/host-claim.h), and touches no other:
 *
 *   - main, "inet sbx_<instance>", owned (flags owner): only the sbxd that made it may change
 *     or delete it, another program's flush leaves it, and it goes when that sbxd exits. It
 *     holds every rule below and marks (EGRESS_MARK) each packet of the instance's links it
 *     sees;
 *   - keep, "inet sbxk_<instance>", an ordinary table that outlives sbxd: a packet of the
 *     instance's links without the mark is dropped (so when the main table is gone, with sbxd
 *     down, they pass nothing), and a copy of each sandbox's pinned addresses, for the next
 *     sbxd. Another program can flush it; sbxd puts it back (egress.c's watch).
 *
 *   - base: the tables, the always-blocked sets, the per-link verdict maps and the hooked
 *     chains (forward: replies to a sandbox pass, anything new towards one is dropped; from
 *     one: replies pass, invalid is dropped, then its chain sN; input: replies, neighbour
 *     discovery, then sN_in; nat: DNS to the resolver, transforms to the proxy through
 *     sN_nat, masquerade out of any other interface);
 *   - a slot's objects: its sets (a4/a6 allowOut, d4/d6 denyOut, p4/p6 pinned) and chains;
 *   - a slot's rules: sN in the policy's order, sN_in, sN_nat, and its map entries;
 *   - a slot's removal, whatever a crash left of it;
 *   - pins: addresses into a slot's pinned set for a while.
 */
#pragma once

#include <stddef.h>

#include "buf.h"
#include "egress/policy/net-policy.h"

/* The mark the main table sets on its links' packets, for the keep table: a bit no other
 * software here uses (Kubernetes' are 0x4000 and 0x8000, WireGuard's the low 16 bits). */
#define EGRESS_MARK  "0x20000000"
#define EGRESS_TABLE "sbx" /* the main table: sbx_<instance>; the keep table: sbxk_<instance> */

struct nft_names {
        char main[80], keep[80]; /* "inet sbx_<instance>", "inet sbxk_<instance>" */
};

void nft_names(const char *instance, struct nft_names *ret);

/* Both tables and their fixed chains; idempotent (the base chains are flushed and refilled). */
int nft_base_rules(struct buf *b, const struct nft_names *n, unsigned dns_port);
/* slot's sets and chains exist (idempotent), flushed. */
int nft_slot_objects(struct buf *b, const struct nft_names *n, int slot);
/* slot's rules for policy p (after nft_slot_objects), its transforms to proxy_port, its link
 * in both tables' links. */
int nft_slot_rules(struct buf *b, const struct nft_names *n, int slot, const struct net_policy *p,
                   unsigned dns_port, unsigned proxy_port);
/* slot's chains, sets and map entries gone (made first, so that a partial leftover goes too). */
int nft_slot_remove(struct buf *b, const struct nft_names *n, int slot);
/* count addresses (4 or 16 bytes each, family AF_INET or AF_INET6) into slot's pinned set, and
 * its copy in the keep table, for ttl_s seconds, each once. */
int nft_pin(struct buf *b, const struct nft_names *n, int slot, int family, const void *addrs,
            size_t count, unsigned ttl_s);
