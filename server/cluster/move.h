/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Moving sandboxes off a drained node (sbx node drain NAME --move; server/cluster/README.md
 * "Failure and maintenance"). For each sandbox of the drained node, that node:
 *  1. persists it (a filesystem-only pause, E2B's pause with memory false: its writable
 *     upper becomes a store layer, its processes end);
 *  2. picks a target: a live node that is not draining, below capacity, the least loaded;
 *  3. sends the target POST /v1/cluster/adopt {from, record, resume}: the sandbox's record
 *     with its layers as "sha256:<hex>"; the target pulls the layers it lacks from this node
 *     (layer-pull.h, verified by hash), registers the sandbox under the same id, token,
 *     metadata, env vars and network policy, maps it to itself in etcd, and resumes it when it
 *     was running (a fresh start on its files, as E2B's resume after a pause without memory);
 *  4. on success forgets it (record, dir, slot); on failure resumes it here when it was
 *     running and reports why it stayed.
 * Sandboxes that mount volumes stay (a volume lives on its node). Each outcome is reported.
 */
#pragma once

#include "http/http.h"

#define CLUSTER_MOVE_ADOPT_MS   (30 * 60 * 1000)     /* one sandbox's adoption (layer pulls) */
#define CLUSTER_MOVE_REMOTE_MS  (6 * 60 * 60 * 1000) /* a drain --move handed to its node */
#define CLUSTER_MOVE_MIN_LEFT_S 30 /* a moved running sandbox gets at least this much time */

/* POST /v1/nodes/{name}/drain with ?move=1 or {"move": true}, after the drain is recorded:
 * run the moves on that node (here, or handed to it) and answer
 * {"node", "moved", "kept", "sandboxes": [{"sandboxID", "outcome": "moved"|"kept", "node"?,
 * "reason"?}]}. */
int cluster_drain_move(struct request *req, const char *name);

/* POST /v1/cluster/adopt (node-only): the target's side of 3. */
int cluster_handle_adopt(struct request *req);
