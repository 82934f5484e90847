/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbx-egress's life (egress/README.md): it reads sbxd's messages on the control channel
 * (api/egress-ctl.md) and keeps what they say: the CA and the upstream resolver (hello), the
 * policies by slot (policy, forget), the build proxies (build, build-end); from serve on, it
 * answers sandboxes through the resolver and the TLS proxy on the sockets hello handed over,
 * asking sbxd for pins and secrets. Returns when sbxd closes the channel: 0, or -errno when the
 * channel broke (a message against the contract, a socket error).
 */
#pragma once

#define EGRESS_BUILDS_MAX 16 /* build proxies at once */

int egress_run(int ctl_fd);
