/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PUT /sandboxes/{id}/network (docs/e2b-wire.md "Egress"): E2B's SandboxNetworkUpdateConfig
 * ({allow_internet_access?, allowOut?, denyOut?}; an omitted field is cleared: the server's
 * default for allow_internet_access, empty lists). 204 once the new rules are in place; 400
 * for a bad body, 404 unknown sandbox; a sandbox created loopback-only gets its link now
 * (lifecycle/lifecycle.h lifecycle_set_network).
 */
#pragma once

#include "http/http.h"

int e2b_set_network(struct request *req);
