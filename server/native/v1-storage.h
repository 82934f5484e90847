/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native API's storage (api/openapi/sbx-v1.yaml, "storage"), rows of front/routes.c:
 *   GET  /v1/storage        what holds sandbox disks: {backend, pool: {kind, root, size, used,
 *                           free, reserve, imageBytes}, sandboxes: [{id, state, diskMB,
 *                           referenced, exclusive, limit}]}: the pool's figures and each
 *                           sandbox's qgroup (storage/disk-pool.h); no pool: backend only
 *   POST /v1/storage/grow   {"size": "64G" | bytes}: grow the pool's image while sandboxes run;
 *                           200 with the new figures; 400 a bad or smaller size; 409 no image
 *                           pool (images, tmpfs, or a state dir on btrfs: grow that file system
 *                           instead); 507 the host disk cannot hold it
 */
#pragma once

#include "http/http.h"

int v1_storage_get(struct request *req);
int v1_storage_grow(struct request *req);
