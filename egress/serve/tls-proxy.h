/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress proxy (server/egress/README.md "Credentials"): where nftables sends the new HTTPS
 * connections (TCP 443) that a sandbox with network.rules transforms makes and its policy
 * allows (server/egress/egress.c, chain sN_nat). It knows the sandbox by its source address and the
 * destination by conntrack (SO_ORIGINAL_DST), reads the TLS ClientHello's server name without
 * consuming it, and then:
 *   - no transform for that name (or no name): the bytes are relayed untouched to the
 *     destination, TLS and all;
 *   - a transform: TLS is terminated with a leaf certificate for the name signed by the
 *     sandboxes' CA (egress-tls.h), a TLS connection to the destination is opened that must
 *     prove the same name against the host's CA bundle, the request head gets the transform's
 *     headers (secret placeholders resolved at that moment; one request per connection,
 *     "Connection: close"), and the rest is relayed both ways.
 * Plain HTTP (port 80) is never transformed: nothing could prove to whom a header goes.
 *
 * One listening socket per family on one ephemeral port (sbxd's, which keeps them across
 * restarts of sbx-egress); a thread per connection. Limits:
 * EGRESS_PROXY_CONNS connections in all, EGRESS_PROXY_PER_SANDBOX per sandbox (past them the
 * connection is closed at once), a ClientHello and a request head of PROXY_HEAD_MAX bytes
 * (policy/proxy-parse.h) within EGRESS_PROXY_HEAD_MS, connecting upstream within
 * EGRESS_PROXY_CONNECT_MS, EGRESS_PROXY_IDLE_MS without a byte either way ends it.
 */
#pragma once

#include <stddef.h>

#include "policy/net-policy.h"
#include "serve/tls-leaf.h"

#define EGRESS_PROXY_CONNS       256
#define EGRESS_PROXY_PER_SANDBOX 32
#define EGRESS_PROXY_HEAD_MS     10000
#define EGRESS_PROXY_CONNECT_MS  10000
#define EGRESS_PROXY_IDLE_MS     300000
#define EGRESS_PROXY_PORT        443 /* what is redirected */

struct egress_proxy;

/* What the proxy asks of its owner (proc/egress-run.c), as egress_dns_hooks. secret: the
 * current value of the secret named name, for the rules of slot, into buf: its length, -ENOENT,
 * -EPERM (not a secret that slot's rules name) or -ENOBUFS. */
struct egress_proxy_hooks {
        int (*lookup)(void *arg, int family, const void *addr, struct net_policy *ret);
        int (*secret)(void *arg, int slot, const char *name, char *buf, size_t size);
        void *arg;
};

/* Accepts on sock4 and sock6 (listening sockets of one port, bound by sbxd; owned from here
 * on) from a thread of its own. tls is borrowed (it outlives the proxy). */
int egress_proxy_start(const struct egress_proxy_hooks *hooks, struct egress_tls *tls, int sock4,
                       int sock6, struct egress_proxy **ret);
/* Stops accepting, cuts every open connection, waits for their threads; NULL is fine. */
void egress_proxy_stop(struct egress_proxy *p);
