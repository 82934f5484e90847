/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The wiring of the agent: its one route table, and what the init loop calls in the process
 * table. This top level may include every folder (scripts/layers.conf); the folders below it
 * know nothing of each other beyond their own layer.
 */
#pragma once

#include "core/init.h"
#include "core/route.h"

/* Every route the agent serves, by port: 0 (sbxd's own: /init, /health, the native /v1 API),
 * 49983 (envd), 49999 (the code interpreter). Unknown routes: envd's REST 404;
 * every other port is a user port, relayed to the sandbox's own server (port/relay.h). */
extern const struct agent_route_table agent_routes;

/* The process table's reaping, deadline and shutdown hooks. */
extern const struct agent_init_hooks agent_init_hooks;

/* POST /init on port 0: apply the sandbox-wide defaults (core/config.h), then let the code
 * interpreter warm its default kernel (bounded), then 204. */
int agent_handle_init(struct agent_request *r);
