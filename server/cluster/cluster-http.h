/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster's hooks into request handling (front/front.c calls them only when
 * srv->cluster is set), and its routes. Where a request goes is the matched route row's
 * `place` (http/route.h, enum route_place), never its path:
 *  - cluster_hop(): first call, before anything; a CLUSTER_HOP_HEADER that verifies
 *    (cluster/hop-auth.h) marks the request from_node (answered here, whatever its row says),
 *    one that does not is refused;
 *  - cluster_forward_sandbox(): a sandbox's traffic (E2b-Sandbox-Id, a sandbox Host) and
 *    PLACE_SANDBOX rows: forwarded to the owner node (cluster/forward.h), 503 "node lost" for
 *    a lost node's sandbox;
 *  - cluster_route(): after the row's lookup and auth check: by the row's place, forwarded to
 *    the sandbox's or the volume's node, a list gathered from every live node, an MCP session
 *    or a signed /files URL of another node forwarded (cluster/owner-find.h), a node-only row
 *    refused without the hop;
 *  - cluster_place_create(): last call of a PLACE_CREATE* row; placed here (0: go on locally)
 *    or forwarded, buffered, to the node picked;
 *  - cluster_hook_created(): lifecycle's hook after a create, before it answers: the mapping.
 */
#pragma once

#include <stdbool.h>

#include "http/http.h"
#include "http/route.h"

/* Each: true when the request is the cluster's (*ret: its status / -errno; req->forwarded set
 * when the body must go to forward_upload / forward_finish); false: answered here. */
bool cluster_hop(struct request *req, int *ret);
bool cluster_forward_sandbox(struct request *req, const char *id, int *ret);
bool cluster_route(struct request *req, const struct route *rt, int *ret);
int cluster_place_create(struct request *req);
int cluster_hook_created(struct server *srv, const char *id);

/* GET /v1/nodes: the live nodes and their load. POST /v1/nodes/{name}/drain and
 * DELETE /v1/nodes/{name}/drain: stop / resume placing sandboxes there. */
int cluster_handle_nodes(struct request *req);
int cluster_handle_drain(struct request *req);
