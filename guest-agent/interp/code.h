/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code-interpreter API on port 49999 (docs/e2b-wire.md §4): POST /execute
 * (NDJSON stream), /contexts create/list/delete/restart, GET /health. Contexts live in one
 * table; each has a kernel (interp/code-kernel.h) started on first use and an exec lock that
 * serialises its executions. Default contexts: python (prewarmed at /init when the template
 * ships kernels) and javascript; typescript, bash, r and java defaults appear on first use.
 */
#pragma once

#include "core/server.h"

/* Answer one port-49999 request. */
int agent_code_handle(struct agent_request *r);

/* Called after /init was applied: when the template ships kernels, start the default python
 * context's kernel with the template's preload list and wait (bounded) until it is ready, so
 * that a sandbox is handed out with a warm kernel. */
void agent_code_on_init(void);
