/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandbox lifecycle: create (jailer + agent /init), kill, and the timeout thread.
 *
 * Create, in order: template → uid slot → id, token → <state>/sandboxes/<id>/{rootfs/} →
 * jail spec → sbx-jailer (status line) → agent /init (port 0) → sandbox.json → registry.
 * Any failure tears down what exists (teardown.h) and gives the slot back. The registry lock
 * is held for table updates only, never while the jailer runs.
 */
#pragma once

#include <stddef.h>

#include "server.h"
#include "template.h"
#include "validate.h"

#define AGENT_INIT_TIMEOUT_MS 10000
#define SANDBOX_LOG_NAME      "agent.log" /* jailer and agent stderr, in the sandbox dir */
#define SANDBOX_PIDS_MAX      1024
#define CPU_PERIOD_US         100000

/* On success *ret is a referenced, registered sandbox. On failure: -ENOENT (unknown
 * template), -EUSERS (no uid slot left), -EIO (the sandbox did not start) and others, with a
 * client-facing message in errmsg. */
int lifecycle_create(struct server *srv, const struct create_params *p, struct sandbox **ret,
                     char *errmsg, size_t errlen);

/* Remove from the registry and tear down. -ENOENT when unknown (or already being killed). */
int lifecycle_kill(struct server *srv, const char *id);

/* Tear down a sandbox already removed from the registry; drops the reference. */
void lifecycle_destroy(struct server *srv, struct sandbox *s, const char *why);

/* Build the jail spec for s (pure apart from allocation; used by tests). */
cJSON *lifecycle_jail_spec(const struct server *srv, const struct sandbox *s,
                           const struct template_info *t);

/* Timeout thread: kills sandboxes whose endAt passed. */
int lifecycle_timer_start(struct server *srv);
void lifecycle_timer_stop(struct server *srv);
