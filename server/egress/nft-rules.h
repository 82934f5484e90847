/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The text of sbxd's nftables commands for sandboxes' egress (server/README.md "Egress"), one
 * function per part, appended to a buffer that egress.c runs as one libnftables transaction.
 * t is the table ("inet sbx"). Pure: no I/O.
 *
 *   - base: the table, the always-blocked sets, the per-link verdict maps and the hooked
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

/* The table and its fixed chains; idempotent (the base chains are flushed and refilled). */
int nft_base_rules(struct buf *b, const char *t, unsigned dns_port);
/* slot's sets and chains exist (idempotent), flushed. */
int nft_slot_objects(struct buf *b, const char *t, int slot);
/* slot's rules for policy p (after nft_slot_objects), its transforms to proxy_port. */
int nft_slot_rules(struct buf *b, const char *t, int slot, const struct net_policy *p,
                   unsigned dns_port, unsigned proxy_port);
/* slot's chains, sets and map entries gone (made first, so that a partial leftover goes too). */
int nft_slot_remove(struct buf *b, const char *t, int slot);
/* n addresses (4 or 16 bytes each, family AF_INET or AF_INET6) into slot's pinned set for ttl_s
 * seconds, each once. */
int nft_pin(struct buf *b, const char *t, int slot, int family, const void *addrs, size_t n,
            unsigned ttl_s);
