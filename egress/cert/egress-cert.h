/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The certificates of the sandboxes' CA (server/egress/README.md "Credentials"), with OpenSSL: the
 * CA itself (sbxd makes it once, server/egress/egress-ca.h) and the leaves it signs for the names
 * the TLS proxy intercepts (sbx-egress, egress/serve/tls-leaf.h). No I/O: keys and certificates
 * in memory.
 */
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>

#define EGRESS_CA_DAYS   3650
#define EGRESS_LEAF_DAYS 30

/* A new CA: an EC P-256 key and a self-signed certificate "sbx egress CA <8 hex digits>",
 * CA:TRUE, pathlen:0, keyCertSign and cRLSign, EGRESS_CA_DAYS. -EIO (OpenSSL's error queue
 * holds why), -ENOMEM. */
int egress_cert_make_ca(EVP_PKEY **ret_key, X509 **ret_cert);

/* A leaf for name (its only SAN, and its CN) over key, signed by ca / ca_key: CA:FALSE,
 * digitalSignature, serverAuth, EGRESS_LEAF_DAYS, a random serial. NULL on failure. */
X509 *egress_cert_leaf(EVP_PKEY *key, const char *name, X509 *ca, EVP_PKEY *ca_key);

/* PEM text of a key or of a certificate (exactly one of them), NUL-terminated, to free (wipe a
 * key's). NULL on failure. */
char *egress_cert_pem(EVP_PKEY *key, X509 *cert);
