/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Start-up: take over the sandboxes a previous sbxd left running. For every
 * <state>/sandboxes/<id>/sandbox.json: when the recorded agent pid is alive and is that
 * sandbox's agent (its cgroup is sbx/<id>), it is registered again (same id, token, uid slot,
 * endAt, metadata) and watched; otherwise whatever is left of it (cgroups, dir) is torn down.
 * A dir without a readable record is torn down too.
 */
#pragma once

#include "core/server.h"
#include "lifecycle/sandbox.h"

/* Returns the number of sandboxes adopted (>= 0) or -errno when the dir cannot be read. */
int adopt_sandboxes(struct server *srv);

/* Parse a sandbox.json record into a new sandbox (no pidfd, no dir). Pure; used by tests. */
int adopt_parse_record(const char *text, struct sandbox **ret);
