/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Volumes in cluster mode (server/cluster/README.md, "Volumes"). A volume lives on the node
 * that created it; etcd says which:
 *   volumes/<id>          the node's name; no lease (outlives its node: "node lost")
 *   volume-names/<name>   {"id","node"}: written with a create-if-absent transaction, so a
 *                         name is unique in the cluster as it is on one node
 * Both are written before a create answers and deleted with the volume. Through any node:
 *  - /volumes/<id>… and /volumecontent/<id>/… of a volume another node holds are forwarded
 *    there (streamed), those of a lost node answered 503 "node lost";
 *  - GET /volumes lists every live node's volumes;
 *  - POST /volumes is placed: the live, undrained node with fewer volumes of two drawn at
 *    random;
 *  - a sandbox create naming volumes (volumeMounts) is placed on the node holding them: all on
 *    one node, else 400.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "cluster/cluster.h"
#include "http/http.h"
#include "http/route.h"
#include "storage/volume.h"

#define CLUSTER_VOLUMES_KEY      CLUSTER_PREFIX "volumes/"
#define CLUSTER_VOLUME_NAMES_KEY CLUSTER_PREFIX "volume-names/"
#define CLUSTER_VOLUME_CACHE     256 /* volume id -> node entries remembered (a volume never moves) */

/* A volume-names/<name> value: {"id","node"} with a volume id and a node name. 0, or -EINVAL
 * for anything else. */
int cluster_volume_name_parse(const char *value, char id[static VOLUME_ID_LEN + 1],
                              char node[static CLUSTER_NAME_MAX + 1]);
/* The value for id on node (malloc'd), NULL without memory. */
char *cluster_volume_name_format(const char *id, const char *node);

/* The distinct names of a create body's volumeMounts (at most SANDBOX_MAX_VOLUME_MOUNTS);
 * malformed entries are skipped (the local create refuses them). Returns the count. */
size_t cluster_volume_mount_names(const cJSON *body, const char *names[], size_t max);

/* First call of a PLACE_VOLUME row: the volume id another node holds is forwarded there
 * (true), or answered "node lost"; false: answer locally (this node's, or no such volume). */
bool cluster_volumes_forward(struct request *req, const char *id, int *ret);
/* GET /volumes (PLACE_LIST_VOLUMES): every live node's volumes; a lost node's from etcd. */
int cluster_volumes_list(struct request *req);

/* Last call of POST /volumes (PLACE_CREATE_VOLUME, not from another node): 0 to create here,
 * else the status of the answer given (the name taken elsewhere, no node can take it, the
 * placed node's answer). */
int cluster_volumes_place(struct request *req);

/* An E2B sandbox create whose volumeMounts name volumes of the cluster (the native API mounts
 * none): *ret_pinned and the node's address (*ret_self when it is this one). 0 (pinned or
 * not), or the status of the refusal answered (volumes on different nodes, their node lost,
 * drained or full, no etcd). Without the template, that node pulls it. */
int cluster_volumes_pin(struct request *req, bool *ret_pinned, bool *ret_self, char *addr,
                        size_t addr_len);

/* The struct server hooks (core/server.h). */
int cluster_hook_volume_created(struct server *srv, const char *id, const char *name);
void cluster_hook_volume_deleted(struct server *srv, const char *id, const char *name);
int cluster_hook_may_create(struct server *srv, char *msg, size_t msg_len);

/* At start: this node's volumes into etcd, and its stale entries (volumes gone while etcd
 * was not told) out. Logged, never fatal. */
void cluster_volumes_register(struct cluster *c, struct server *srv);
