/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The node of a request that names no sandbox id (cluster_route() calls these for the rows
 * placed PLACE_SESSION and PLACE_SIGNED_FILES):
 *  - an MCP request (/mcp) whose Mcp-Session-Id starts with another node's name: the session
 *    lives there (its state is in that node's memory, native/mcp-host.c names its ids
 *    "<node>-<32 hex>"), so the request is forwarded there;
 *  - a signed /files URL without E2b-Sandbox-* headers that no local sandbox's token signs:
 *    every other live node is asked (CLUSTER_FILES_OWNER_PATH, a node-only call under the
 *    signed hop header) whether one of its sandboxes does, and the request forwarded to the
 *    one that says so.
 */
#pragma once

#include <stdbool.h>

#include "http/http.h"

/* The node-only question "which of your sandboxes signs this /files URL": the same method,
 * this path, the URL's own query. Answered 200 {"sandboxID"} or 404 (native shape). */
#define CLUSTER_FILES_OWNER_PATH "/v1/cluster/files-owner"

/* true when the request is taken (*ret: its status / -errno; req->forwarded set when it is
 * being forwarded). */
bool owner_find_mcp(struct request *req, int *ret);
bool owner_find_signed_files(struct request *req, int *ret);

/* The answer to CLUSTER_FILES_OWNER_PATH, a PLACE_NODE_ONLY row (front/routes.c). */
int owner_find_answer_files(struct request *req);
