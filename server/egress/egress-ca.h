/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandboxes' CA (server/egress/README.md "Credentials"): <state>/EGRESS_CA_DIRNAME/ca.key (EC
 * P-256, 0600) and EGRESS_CA_CERT (0644), made by the first sbxd that needs them
 * (egress/cert/egress-cert.h) and loaded by every later one. sbxd hands both to sbx-egress,
 * which signs its leaves with them, and the certificate to every sandbox with a link.
 */
#pragma once

#include <stddef.h>

#define EGRESS_CA_DIRNAME "egress-ca"
#define EGRESS_CA_CERT    "ca.crt"
#define EGRESS_CA_KEY     "ca.key"
#define EGRESS_CA_PEM_MAX 65536 /* a longer ca.key or ca.crt is refused */

/* The CA's key and certificate as PEM (*ret_key wiped and freed by the caller, *ret_cert
 * freed), loaded from state_dir or made there. -errno with a message in errmsg. */
int egress_ca_load(const char *state_dir, char **ret_key, char **ret_cert, char *errmsg,
                   size_t errlen);
