/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS of the egress proxy (tls-proxy.h; server/egress/README.md "Credentials"), with OpenSSL: leaf
 * certificates signed by the sandboxes' CA for the names the proxy intercepts, and the client
 * side towards the real server.
 *
 * The CA comes from sbxd (its key and certificate as PEM; sbxd keeps them in
 * <state>/egress-ca/). Leaves get a key of their own made at start (one per process, in memory
 * only), the name as their only SAN, EGRESS_LEAF_DAYS, a random serial; the server context of
 * each name is cached, at most EGRESS_TLS_CACHE names (the least recently used goes).
 *
 * Upstream certificates are verified against the host's CA bundle (OpenSSL's default paths)
 * plus an extra bundle when sbxd gives one (--egress-upstream-ca), with the name the sandbox
 * asked for; TLS 1.2 at least.
 */
#pragma once

#include <openssl/ssl.h>
#include <stddef.h>

#define EGRESS_TLS_CACHE 256

struct egress_tls;

/* From the CA's key and certificate (PEM) and an extra upstream bundle (PEM, or NULL). -errno
 * with a message in errmsg. */
int egress_tls_new(const char *ca_key, const char *ca_cert, const char *upstream_ca,
                   struct egress_tls **ret, char *errmsg, size_t errlen);
void egress_tls_free(struct egress_tls *t);

/* A new server-side SSL for name (its leaf minted or taken from the cache); NULL on failure. */
SSL *egress_tls_server(struct egress_tls *t, const char *name);
/* A new client-side SSL that verifies the server as name; NULL on failure. */
SSL *egress_tls_client(struct egress_tls *t, const char *name);
