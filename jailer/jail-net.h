/* SPDX-License-Identifier: Apache-2.0 */
/* Networking of a new net namespace: loopback, and the egress link when the spec asks for one. */
#pragma once

#include <sys/types.h>

#include "jail-spec.h"

/* Brings "lo" up in the caller's net namespace (needs CAP_NET_ADMIN there). */
int jail_net_loopback_up(void);

/* The egress link of step 9 (jailer/README.md): a veth pair, e->host_if in the caller's net
 * namespace and "eth0" in pid's, both up with their addresses, the sandbox's default routes via
 * the host end, strict reverse-path filtering on the host end. A stale link of that name (a
 * sandbox of the same slot that died with sbxd down) is deleted first. Records a message with
 * jail_errorf() on failure; the link is gone again when it fails after creating it. */
int jail_net_egress(const struct sbx_jail_egress *e, pid_t pid);
/* The same for the net namespace of the fd child_ns. */
int jail_net_egress_ns(const struct sbx_jail_egress *e, int child_ns);

/* Deletes e->host_if (and with it the sandbox end); an absent link is fine. */
int jail_net_egress_remove(const struct sbx_jail_egress *e);
