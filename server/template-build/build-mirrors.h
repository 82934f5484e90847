/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The hosts a template build may reach through the build proxy (server/template-build/README.md
 * "Egress"; the proxy is sbx-egress's, egress/serve/build-proxy.h): the package mirrors of the
 * host's apt sources, read once at sbxd's start.
 */
#pragma once

#include <stddef.h>

#define BUILD_MIRRORS_MAX 64                       /* hosts; more are ignored */
#define BUILD_MIRRORS_ENV "SBX_BUILD_EGRESS_HOSTS" /* comma-separated: replaces the list */

/* The allowed hosts, lowercase, each once: SBX_BUILD_EGRESS_HOSTS when set (empty: none), else
 * the hosts of the http(s) URIs in /etc/apt/sources.list and
 * /etc/apt/sources.list.d/{*.list,*.sources}. *ret (a vector of *ret_n strings) to free. */
int build_mirror_hosts(char ***ret, size_t *ret_n);
