/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress proxy's CA in a sandbox (server/egress/README.md "Credentials"): appended to the
 * sandbox's SBX_JAIL_CA_BUNDLE (Debian's bundle, which curl, OpenSSL, Python's ssl and
 * requests' certifi-less setups read; Node reads its own store unless NODE_EXTRA_CA_CERTS or
 * --use-openssl-ca says otherwise), written as a new file of the upper layer owned by sandbox
 * root. Paths resolve inside the root (openat2 RESOLVE_IN_ROOT), the file itself is never
 * followed as a symlink; a bundle larger than SBX_JAIL_CA_BUNDLE_MAX is an error, a sandbox
 * without /etc/ssl/certs gets nothing.
 */
#pragma once

#include <sys/types.h>

#include "jail-egress.h"

/* Appends pem (empty or NULL: nothing) unless the bundle already holds it. 0 or -errno. */
int jail_ca_install(int root_fd, uid_t uid, const char *pem);
