/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A built template's start and ready commands (templates/README.md "Built through the E2B
 * API"), run in every new sandbox of the template right after the agent's /init, warm-pool
 * members included: the start command is started in the background as the template's default
 * user in its default workdir, then the ready command is run every START_CMD_READY_POLL_MS
 * until it exits 0; only then does the create answer. Without a ready command the create
 * answers once the start command has started.
 */
#pragma once

#include <stddef.h>

#include "lifecycle/sandbox.h"
#include "storage/template.h"

#define START_CMD_READY_TIMEOUT_MS 120000 /* then the start fails: 500 naming the command */
#define START_CMD_READY_POLL_MS    200
#define START_CMD_READY_RUN_MS     30000 /* one run of the ready command */

/* Nothing when t has neither command. -ETIMEDOUT when the ready command never succeeded,
 * -ENOENT/-EIO when the start command could not start, with errmsg for the client. */
int lifecycle_start_cmd(const struct sandbox *s, const struct template_info *t, char *errmsg,
                        size_t errlen);
