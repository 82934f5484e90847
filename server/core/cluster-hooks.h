/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the rooms below the cluster ask of it, when sbxd runs with --cluster: the cluster
 * (cluster/cluster.h) installs one table in srv->cluster_hooks before it publishes
 * srv->cluster; a single node has none, and every caller then goes on alone.
 */
#pragma once

#include <stddef.h>

struct server;

struct cluster_hooks {
        const char *node_name; /* this node's name: MCP session ids carry it (native/mcp-host.c) */
        /* a create is about to answer: record where the sandbox lives (-errno: it fails) */
        int (*created)(struct server *srv, const char *id);
        /* a volume created here, before its create answers (-EEXIST: its name was taken on
         * another node meanwhile; another error: not recorded); deleted here */
        int (*volume_created)(struct server *srv, const char *id, const char *name);
        void (*volume_deleted)(struct server *srv, const char *id, const char *name);
        /* whether this node may create a sandbox that is not placed (an MCP session's: -EBUSY
         * when drained, msg says why) */
        int (*may_create)(struct server *srv, char *msg, size_t msg_len);
        /* a template this node lacks, from a node that has it (0, or -ENOENT when none has it,
         * or another -errno with errmsg) */
        int (*pull_template)(struct server *srv, const char *name, char *errmsg, size_t errlen);
};
