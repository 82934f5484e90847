/* SPDX-License-Identifier: Apache-2.0 */
/*
 * network.rules, a sandbox's request transforms (net-policy.h has what a client sends):
 * {"<domain>": [{"transform": {"headers": {...}}}]}, parsed and copied. Pure.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>

#include "net-rule.h"

/* domains, rules per domain, headers per domain (after the rules of one domain are applied in
 * order), a header name, a value, all headers of a domain */
#define NET_TRANSFORM_DOMAINS   64
#define NET_TRANSFORM_RULES     16
#define NET_TRANSFORM_HEADERS   32
#define NET_TRANSFORM_NAME_MAX  64
#define NET_TRANSFORM_VALUE_MAX 8192
#define NET_TRANSFORM_TOTAL_MAX 16384
#define NET_SECRET_PLACEHOLDER  "${e2b.secrets."

/* One domain key of network.rules: the headers its rules set, in order (a later rule's header
 * replaces an earlier one of the same name, case-insensitively). */
struct net_transform {
        struct net_rule domain; /* NET_DOMAIN */
        cJSON *headers;         /* object of strings, owned; values may hold secret placeholders */
};

/* network.rules: NULL or null is none; -EINVAL with *ret_msg. */
int net_transforms_parse(const cJSON *rules, struct net_transform **ret, size_t *ret_n,
                         const char **ret_msg);
int net_transforms_copy(const struct net_transform *xf, size_t n, struct net_transform **ret);
void net_transforms_free(struct net_transform *xf, size_t n);
