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
struct cluster_hooks;
struct ui_files;
struct lifecycle_state;

struct server {
        const struct sbxd_config *config;
        struct keys keys;
        struct registry *registry;
        /* lifecycle/lifecycle-state.h: its threads, the create turnstile, the warm pool */
        struct lifecycle_state *lifecycle;
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
         * cluster runs; with it, what the rooms below ask of it (core/cluster-hooks.h) */
        struct cluster *cluster;
        const struct cluster_hooks *cluster_hooks;
};
