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

/* The handlers of the port-49999 routes (guest-agent/routes.c): POST /execute, POST and GET
 * /contexts, GET /health, DELETE /contexts/{id} and POST /contexts/{id}/restart (one handler
 * for the /contexts/ prefix), and what no route of the port matches ({"detail":"Not Found"}).
 * Each answers a 404 saying why when the template ships no kernels. */
int agent_code_handle_execute(struct agent_request *r);
int agent_code_handle_create(struct agent_request *r);
int agent_code_handle_list(struct agent_request *r);
int agent_code_handle_health(struct agent_request *r);
int agent_code_handle_context(struct agent_request *r);
int agent_code_handle_not_found(struct agent_request *r);

/* Called after /init was applied: when the template ships kernels, start the default python
 * context's kernel with the template's preload list and wait (bounded) until it is ready, so
 * that a sandbox is handed out with a warm kernel. */
void agent_code_on_init(void);
