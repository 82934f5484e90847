/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent channel's server side: one connection = one request (api/frames.md). A connection
 * thread reads the REQ_HEAD, picks the handler from the route table (core/route.h) and calls it;
 * the handler answers through core/request.h and returns its status, which the server logs.
 * The connection is closed when the handler returns.
 */
#pragma once

#include "core/request.h"
#include "core/route.h"

#define AGENT_MAX_CONNECTIONS 256
/* Of those, kept for envd, the code interpreter and sbxd's own calls: connections to the
 * sandbox's own servers (user ports, WebSockets included) take at most the rest, past which
 * they get 503 while the SDK's calls still get through. */
#define AGENT_RESERVED_CONNECTIONS  32
#define AGENT_USER_PORT_CONNECTIONS (AGENT_MAX_CONNECTIONS - AGENT_RESERVED_CONNECTIONS)

/* The route table every later connection is served with (not copied: t must outlive the
 * agent). Set once at start-up, before the first connection. */
void agent_server_set_routes(const struct agent_route_table *t);

/* Serve one accepted connection in a new detached thread (takes ownership of fd). Over
 * AGENT_MAX_CONNECTIONS concurrent connections it answers 503 inline and closes. */
void agent_server_spawn(int fd);

/* Serve one connection on the calling thread (used by the thread above and by tests); closes
 * fd. Returns what the handler returned (its status, or -errno), or -errno when no request
 * head could be read. */
int agent_server_serve(int fd);

/* Give up this connection's slot in the connection bound while the thread keeps running (a
 * process stream whose client left keeps draining the process's pipes). Idempotent per
 * request. */
void agent_server_release_slot(struct agent_request *r);

/* Handlers of core's own: 204 after draining the body (GET /health), and envd's REST 404 for
 * anything no route takes. */
int agent_handle_health(struct agent_request *r);
int agent_handle_not_found(struct agent_request *r);
