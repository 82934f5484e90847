/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cluster's hooks into request handling (front/front.c calls them only when
 * srv->cluster is set), and its routes:
 *  - cluster_intercept(): first call; a request for a sandbox another node owns is forwarded
 *    there (cluster/forward.h), one for a sandbox of a lost node answered 503 "node lost",
 *    a list of sandboxes (E2B's, the native one) aggregated over every live node, an MCP
 *    session or a signed /files URL of another node forwarded (cluster/owner-find.h), a
 *    CLUSTER_HOP_HEADER that does not verify (cluster/hop-auth.h) refused;
 *  - cluster_place_create(): last call of a create (E2B's, the native one); placed here (0: go on
 * locally) or forwarded, buffered, to the node picked;
 *  - cluster_hook_created(): lifecycle's hook after a create, before it answers: the mapping.
 * A request carrying a valid CLUSTER_HOP_HEADER came from another node: always answered
 * locally.
 */
#pragma once

#include <stdbool.h>

#include "http/http.h"
#include "http/route.h"

/* true when the request is the cluster's (*ret: its status / -errno; req->forwarded set when
 * the body must go to forward_upload / forward_finish). */
bool cluster_intercept(struct request *req, const struct route_target *t, int *ret);
int cluster_place_create(struct request *req);
int cluster_hook_created(struct server *srv, const char *id);

/* GET /v1/nodes: the live nodes and their load. POST /v1/nodes/{name}/drain and
 * DELETE /v1/nodes/{name}/drain: stop / resume placing sandboxes there. */
int cluster_handle_nodes(struct request *req);
int cluster_handle_drain(struct request *req);
