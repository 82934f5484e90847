/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Templates and layers on demand between cluster nodes (server/cluster/README.md "Templates
 * on many nodes").
 *
 * Served (node-only routes, Bearer API key + CLUSTER_HOP_HEADER):
 *   GET /v1/cluster/templates/{name}  the template's template.json with every layer as
 *                                     "sha256:<hex>" (a template's own layer dirs are put in
 *                                     the store first, as a snapshot does)
 *   GET /v1/cluster/layers/{hex}      the layer as a tar stream (storage/layer-export.h)
 *
 * Pulled: a create (or a moved sandbox) that needs a template or layer this node lacks asks a
 * live node that advertises the template, fetches each missing layer as a stream straight into
 * the store's importer, keeps it only when its content hash is the one asked for, then writes
 * the template. One pull per layer at a time: a second pull of the same layer waits for the
 * first and uses its result.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/server.h"
#include "http/http.h"

#define CLUSTER_PULL_LAYER_MAX    (64ull << 30) /* bytes of one layer's stream */
#define CLUSTER_PULL_LAYER_TIME_S 1800          /* one layer's transfer */
#define CLUSTER_PULL_TEMPLATE_MS  60000 /* the template's answer (may import layer dirs first) */
#define CLUSTER_PULL_MAX_INFLIGHT 64    /* distinct layers pulled at once; more wait */

/* srv->cluster_hooks->pull_template: template name (no tag) from a node that has it, into this
 * node's store and templates/. 0 pulled; -ENOENT when no other live node advertises it
 * (errmsg untouched); else -EIO (or -ETIMEDOUT, -EFBIG, -EBADMSG) with errmsg. */
int cluster_hook_pull_template(struct server *srv, const char *name, char *errmsg, size_t errlen);

/* Layer hex from the node at addr into this node's store (once; concurrent callers wait).
 * 0 when it is there now. *ret_bytes (may be NULL): bytes received by this call. */
int cluster_pull_layer(struct server *srv, const char *addr, const char *hex, uint64_t *ret_bytes,
                       char *errmsg, size_t errlen);

/* Put this node's template name's own layer dirs in the store (hard links, cached per dir, as
 * a snapshot of it would), so that a layer another node's snapshot of the same template needs
 * is found here instead of pulled. Best effort. Call with the store's read lock held. */
void cluster_seed_template(struct server *srv, const char *name);

/* The routes above. */
int cluster_handle_template_get(struct request *req);
int cluster_handle_layer_get(struct request *req);
