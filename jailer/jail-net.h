/* SPDX-License-Identifier: Apache-2.0 */
/* Networking of a new net namespace: loopback only (deny-all egress by construction). */
#pragma once

/* Brings "lo" up in the caller's net namespace (needs CAP_NET_ADMIN there). */
int jail_net_loopback_up(void);
