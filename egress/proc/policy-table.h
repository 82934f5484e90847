/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policies sbxd has told sbx-egress, by uid slot, and the lookup the resolver and the proxy
 * make for each sandbox that talks to them: by its source address (policy/link-addr.h). A slot
 * sbxd has said nothing about gets nothing.
 */
#pragma once

#include <cjson/cJSON.h>

#include "policy/net-policy.h"

struct policy_table;

int policy_table_new(struct policy_table **ret);
void policy_table_free(struct policy_table *t);

/* The slot's policy from its record form (replacing what it had): 0, -ERANGE for a slot beyond
 * the addressing plan, -EBADMSG for a record that is not a policy, -ENOMEM. */
int policy_table_set(struct policy_table *t, int slot, const cJSON *record);
/* The slot has no policy any more. */
void policy_table_forget(struct policy_table *t, int slot);

/* The slot whose sandbox address addr is, with a copy of its policy in *ret (net_policy_done);
 * -1 when addr is no sandbox's or its slot has no policy. */
int policy_table_lookup(struct policy_table *t, int family, const void *addr,
                        struct net_policy *ret);
