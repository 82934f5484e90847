/* SPDX-License-Identifier: Apache-2.0 */
/*
 * TLS of the egress proxy (egress/tls-proxy.h; server/README.md "Credentials"), with
 * OpenSSL: the deployment's CA, which only sandboxes trust, leaf certificates it signs for the
 * names the proxy intercepts, and the client side towards the real server.
 *
 * The CA lives in <state>/egress-ca/: ca.key (EC P-256, 0600) and ca.crt, made once by the
 * first sbxd that needs them and loaded by every later one (10 years). Leaves get a key of
 * their own made at start (one per sbxd run, in memory only), the name as their only SAN,
 * 30 days, a random serial; the server context of each name is cached, at most
 * EGRESS_TLS_CACHE names (the least recently used goes).
 *
 * Upstream certificates are verified against the host's CA bundle (OpenSSL's default paths)
 * plus --egress-upstream-ca when given, with the name the sandbox asked for.
 */
#pragma once

#include <openssl/ssl.h>

#define EGRESS_CA_DIRNAME "egress-ca"
#define EGRESS_CA_CERT    "ca.crt"
#define EGRESS_TLS_CACHE  256
#define EGRESS_LEAF_DAYS  30
#define EGRESS_CA_DAYS    3650

struct egress_tls;

/* Loads or makes the CA under state_dir; upstream_ca: an extra PEM bundle to trust upstream,
 * or NULL. -errno with a message in errmsg. */
int egress_tls_new(const char *state_dir, const char *upstream_ca, struct egress_tls **ret,
                   char *errmsg, size_t errlen);
void egress_tls_free(struct egress_tls *t);

/* The CA certificate, PEM (owned by t). */
const char *egress_tls_ca_pem(const struct egress_tls *t);

/* A new server-side SSL for name (its leaf minted or taken from the cache); NULL on failure. */
SSL *egress_tls_server(struct egress_tls *t, const char *name);
/* A new client-side SSL that verifies the server as name; NULL on failure. */
SSL *egress_tls_client(struct egress_tls *t, const char *name);
