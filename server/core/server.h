/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's shared state, passed to every handler. */
#pragma once

#include <pthread.h>
#include <stddef.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/server-config.h"
#include "core/keys.h"

struct registry;
struct pool;
struct volume_store;
struct secret_store;
struct build_service;
struct egress;
struct cluster;
struct ui_files;

struct server {
        const struct sbxd_config *config;
        struct keys keys;
        struct registry *registry;
        pthread_t timer;
        bool timer_started;
        pthread_t monitor; /* lifecycle/monitor.h */
        bool monitor_started;
        int monitor_epoll, monitor_wake, monitor_sigchld;
        /* lifecycle at scale */
        struct pool *pool;         /* lifecycle/pool.h; NULL when off */
        unsigned creates_inflight; /* under create_lock: cold creates running now */
        pthread_mutex_t create_lock;
        pthread_cond_t create_turn; /* a cold create finished: a waiting one may start */
        unsigned starting;          /* __atomic: sandboxes being created (counted in limits) */
        pthread_t sampler;          /* lifecycle/sampler.h: metrics + persist-paused thread */
        bool sampler_started;
        pthread_mutex_t sampler_lock;
        pthread_cond_t sampler_cond;
        bool stopping;              /* under sampler_lock */
        unsigned requests_inflight; /* __atomic: http/http.c, between URI log and completion */
        /* storage/disk-pool.h: sandbox uppers are btrfs subvolumes of this pool; NULL when the
         * host has no btrfs (then disk_images, else tmpfs uppers) */
        struct disk_pool *disk_pool;
        bool disk_images; /* storage/disk-image.h: ext4 image disks (else tmpfs uppers) */
        bool runtime_ok;  /* config->runtime exists: bound at /.sbx/runtime */
        struct volume_store *volumes; /* storage/volume.h */
        struct build_service *build;  /* build/build.h: template builds */
        struct egress *egress;        /* egress/egress.h */
        struct secret_store *secrets; /* storage/secret-store.h */
        struct ui_files *ui;          /* ui/ui-files.h: the web console's files; NULL: none */
        /* --cluster (cluster/cluster.h); NULL for a single node, and then nothing of the
         * cluster runs. cluster_created: called by a create before it answers;
         * cluster_pull_template: a template this node lacks, from a node that has it (0, or
         * -ENOENT when none has it, or another -errno with errmsg). */
        struct cluster *cluster;
        int (*cluster_created)(struct server *srv, const char *id);
        /* --cluster (cluster/cluster-volumes.h): a volume created here, before its create
         * answers (-EEXIST: its name was taken on another node meanwhile; another error: not
         * recorded), deleted here; and whether this node may create a sandbox that is not
         * placed (an MCP session's: -EBUSY when drained, msg says why). */
        int (*cluster_volume_created)(struct server *srv, const char *id, const char *name);
        void (*cluster_volume_deleted)(struct server *srv, const char *id, const char *name);
        int (*cluster_may_create)(struct server *srv, char *msg, size_t msg_len);
        const char *node_name; /* --cluster: this node's name (set before cluster), else NULL */
        int (*cluster_pull_template)(struct server *srv, const char *name, char *errmsg,
                                     size_t errlen);
};
