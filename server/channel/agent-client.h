/* SPDX-License-Identifier: Apache-2.0 */
/* sbxd's internal calls to a sandbox's agent (api/frames.md, port 0). */
#pragma once

#include <stdint.h>

#define AGENT_INTERNAL_MAX_BODY (1024 * 1024) /* an internal call's answer body, discarded */

/* One internal call on port 0 (channel/agent-req.h): method path with a JSON body (may be
 * NULL); retries the connect until deadline_ms passes, and every read and write is bounded by
 * it too. Returns the agent's status (>= 100) or -errno. */
int agent_call_internal(const char *sandbox_dir, const char *method, const char *path,
                        const char *body, int deadline_ms);
