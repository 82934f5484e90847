/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cluster mode (sbxd --cluster etcd://...): this node's registration in etcd under a lease,
 * the view of the other nodes, the sandbox -> node map (cached, kept current by a watch), and
 * placement. Off by default: without --cluster, srv->cluster is NULL and nothing here runs.
 *
 * Keys (all under CLUSTER_PREFIX):
 *   nodes/<name>      JSON {name, addr, capacity, sandboxes, memoryMB, inflight, templates}
 *                     under this node's lease (CLUSTER_LEASE_TTL_S), rewritten every beat
 *   sandboxes/<id>    the owner node's name; no lease (outlives its node: "node lost")
 *   drain/<name>      present while the node is drained (sbx node drain)
 *   volumes/<id>, volume-names/<name>: cluster/cluster-volumes.h
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/server.h"

#define CLUSTER_PREFIX        "/sbx/v1/"
#define CLUSTER_LEASE_TTL_S   5    /* a node silent this long is lost */
#define CLUSTER_BEAT_MS       1000 /* lease refresh, load published, node list reread */
#define CLUSTER_NAME_MAX      63
#define CLUSTER_ADDR_MAX      127
#define CLUSTER_MAX_NODES     256
#define CLUSTER_MAX_TEMPLATES 256 /* template names a node advertises */
#define CLUSTER_MAP_TRIES     3   /* writes of a new sandbox's mapping (an etcd election) */
#define CLUSTER_MAP_RETRY_MS  500

struct cluster;

struct cluster_node {
        char name[CLUSTER_NAME_MAX + 1];
        char addr[CLUSTER_ADDR_MAX + 1]; /* host:port */
        unsigned capacity, sandboxes, inflight;
        uint64_t memory_mb;
        char *templates; /* ",a,b,c," for lookup */
        bool draining;
};

/* Start: register this node and its sandboxes, read the nodes and the map, start the beat and
 * watch threads. Fails when etcd cannot be reached at all. */
int cluster_start(struct server *srv, const char *etcd, const char *name, const char *advertise,
                  struct cluster **ret);
void cluster_stop(struct cluster *c);

const char *cluster_self(const struct cluster *c);

enum cluster_owner {
        OWNER_UNKNOWN, /* no mapping: not a sandbox of the cluster */
        OWNER_SELF,
        OWNER_REMOTE, /* alive: addr filled */
        OWNER_LOST,   /* mapped to a node whose lease expired: node filled */
};
enum cluster_owner cluster_owner(struct cluster *c, const char *id, char *node, size_t node_len,
                                 char *addr, size_t addr_len);

/* Read id's mapping from etcd into the cache (a sandbox created through another node a moment
 * ago, before the watch brought it): 0 when found, -ENOENT, or the etcd error. */
int cluster_lookup(struct cluster *c, const char *id);

/* Pick the node for a create of template: the less loaded of two random eligible nodes
 * (alive, not draining, below capacity), drawn among those that have the template when any of
 * them is eligible, else among all (the one picked pulls the template, layer-pull.h). 0 with
 * *ret_self or addr filled (*ret_self too when no node has the template at all: the local
 * create answers 404); -ENOENT when no node can take a sandbox (drained, full), -EHOSTUNREACH
 * when etcd has been unreachable for a lease's time (creates refused), msg filled either way. */
int cluster_place(struct cluster *c, const char *template_id, bool *ret_self, char *addr,
                  size_t addr_len, char *msg, size_t msg_len);

/* Write id -> this node (before a create answers). -EHOSTUNREACH without etcd. */
int cluster_map_sandbox(struct cluster *c, const char *id);

/* The address of live node name: 0, or -ENOENT (no live node of that name). */
int cluster_node_addr(struct cluster *c, const char *name, char *addr, size_t addr_len);
/* Set id -> node in this node's cached map at once (a sandbox moved away: the watch brings
 * the same a moment later, the beat must not take it for gone meanwhile). */
void cluster_map_note(struct cluster *c, const char *id, const char *node);

/* Every live node (a copy; free with cluster_nodes_free). */
int cluster_nodes(struct cluster *c, struct cluster_node **ret, size_t *ret_n);
void cluster_nodes_free(struct cluster_node *n, size_t count);

/* The etcd client (cluster-volumes.c keeps its own keys there). */
struct etcd *cluster_etcd(struct cluster *c);

/* Drain (or undrain) a node by name: no new placements on it. */
int cluster_set_drain(struct cluster *c, const char *name, bool drain);
