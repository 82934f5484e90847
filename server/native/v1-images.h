/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native API's images (api/openapi/sbx-v1.yaml, "images"), rows of front/routes.c:
 *   POST   /v1/images?name=N[&tag=T][&ref=R]   the archive as the body (streamed to a temp file
 *                                              in the state dir, at most IMAGE_MAX_ARCHIVE
 *                                              bytes), imported (storage/image-import.h): 201
 *   GET    /v1/images                          {"images":[...]}
 *   GET    /v1/images/{id}                     one image (id: its template id, N or N:T)
 *   DELETE /v1/images/{id}                     204
 *   POST   /v1/images/pull                     native/v1-images-pull.h
 */
#pragma once

#include "core/server-config.h"
#include "http/http.h"
#include "storage/image-admit.h"

/* The admission limits of imports and pulls from sbxd's options. */
struct image_limits v1_image_limits(const struct sbxd_config *cfg);

int v1_images_import_begin(struct request *req);
int v1_images_import_finish(struct request *req);
int v1_images_list(struct request *req);
int v1_images_get(struct request *req);
int v1_images_delete(struct request *req);
