/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The volume a request's path names, for the volume forwarding (cluster-volumes.c) and the
 * "node lost" answer's wording (forward.c). A pure function of the path.
 */
#pragma once

#include <stdbool.h>

#include "storage/volume.h" /* VOLUME_ID_LEN */

/* The volume a path names: /volumes/<id>[/] or /volumecontent/<id>/…; false for any other
 * path (GET /volumes, POST /volumes included). id is not validated. */
bool cluster_volume_path_id(const char *path, char id[static VOLUME_ID_LEN + 1]);
