/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The warm pool: for each template of --pool-templates, --pool-size sandboxes started ahead of
 * time (jailer + agent running, /init done, not registered, not listed, no timeout, record
 * marked "pool"). A create takes one, gives it the request's token, env vars, metadata and
 * timeout (agent /init again) and registers it: no jailer on the request path. One background
 * thread refills, one sandbox at a time, after every take. A member whose template.json
 * changed since it started, or whose agent died, is torn down instead of used. Members are torn
 * down at shutdown; an sbxd that crashed leaves records marked "pool", which adoption removes.
 */
#pragma once

#include <stddef.h>

#include "core/validate.h"

struct server;
struct sandbox;
struct pool;

/* NULL *ret when the pool is off (size 0). Starts the refill thread. */
int pool_start(struct server *srv, struct pool **ret);
/* Stop the thread, tear down every member. Accepts NULL. */
void pool_stop(struct pool *p);
/* Take a ready member for p->template_id and apply the request: 0 with a registered,
 * referenced sandbox in *ret; -ENOENT when none is ready (the caller creates cold). */
int pool_take(struct pool *p, const struct create_params *params, struct sandbox **ret);
size_t pool_count(struct pool *p);
