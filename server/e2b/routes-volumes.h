/* SPDX-License-Identifier: Apache-2.0 */
/*
 * E2B's volumes (docs/e2b-wire.md §2.6; storage/volume.h), rows of the route table with
 * X-API-KEY:
 *   POST /volumes {"name", "sizeMB"?}   201 VolumeAndToken {volumeID, name, token}
 *   GET /volumes                         200 [Volume {volumeID, name}], oldest first
 *   GET /volumes/{id}                    200 VolumeAndToken (+ "sizeMB", sbx's)
 *   DELETE /volumes/{id}                 204
 * Errors, as E2B's API answers them: a bad name 400 "Invalid volume name", a name taken 400
 * "Volume with name '<n>' already exists", an id that is no UUID 400 "Invalid volume ID", an
 * unknown one 404 "Volume not found"; sbx's own: a bad sizeMB 400, more than VOLUMES_MAX 400,
 * the state disk cannot take it 507, deleting a volume a sandbox mounts 409.
 */
#pragma once

#include "http/http.h"

int e2b_volume_create(struct request *req);
int e2b_volume_list(struct request *req);
int e2b_volume_get(struct request *req);
int e2b_volume_delete(struct request *req);
