/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandboxes' DNS resolver (server/egress/README.md "Egress"): one UDP socket on an ephemeral
 * port of the host (bound by sbxd, which keeps it across restarts of sbx-egress), where
 * nftables sends every DNS query (udp 53) a sandbox with a link makes.
 * It knows the sandbox by its source address (the lookup hook) and answers by its policy:
 *   - internet allowed: the query goes to the upstream server as it is;
 *   - otherwise a name that an allowOut domain matches goes upstream, and the A and AAAA
 *     addresses of the answer are added to the sandbox's pinned set (the pin hook) for at least
 *     EGRESS_PIN_MIN_S before the answer is passed on: only then may the sandbox connect to
 *     them; any other name gets REFUSED, so DNS is no channel out of a closed sandbox.
 * A thread of its own with a poll loop; at most EGRESS_DNS_PENDING queries in flight (past
 * that SERVFAIL), each waiting at most EGRESS_DNS_TIMEOUT_MS for upstream (then SERVFAIL).
 * UDP only: a truncated answer makes the client retry over TCP, which is refused.
 */
#pragma once

#include <stddef.h>

#include "policy/net-policy.h"

struct egress_dns;

/* What the resolver asks of its owner (proc/egress-run.c: the policy table, a pin through
 * sbxd), so that calls go one way: the owner starts the resolver, which calls back through
 * these. */
struct egress_dns_hooks {
        int (*lookup)(void *arg, int family, const void *addr, struct net_policy *ret);
        int (*pin)(void *arg, int slot, int family, const void *addrs, size_t n, unsigned ttl_s);
        void *arg;
};

#define EGRESS_DNS_PENDING    256
#define EGRESS_DNS_TIMEOUT_MS 3000
#define EGRESS_PIN_MIN_S      300 /* pinned at least this long, whatever the TTL */
#define EGRESS_PIN_MAX_S      86400

/* Answers on sock (a bound UDP socket, owned from here on) from a thread of its own. upstream:
 * an IP address. */
int egress_dns_start(const struct egress_dns_hooks *hooks, const char *upstream, int sock,
                     struct egress_dns **ret);
/* Stops the thread and closes everything; NULL is fine. */
void egress_dns_stop(struct egress_dns *d);
