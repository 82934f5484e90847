/* SPDX-License-Identifier: Apache-2.0 */
/*
 * POST /v1/images/pull (api/openapi/sbx-v1.yaml, "images"): a registry image into a
 * template (pull/pull.h). The body: {"image": REF, "name"?, "tag"?, "username"?,
 * "password"?}. Answered when the pull ends: 201 with the image, or the error's status
 * (v1_image_pull_status()). With `Accept: application/x-ndjson` the answer is 200 at once
 * and a stream of progress lines, one JSON object each, ending in
 * {"status":"done","image":{...}} or {"status":"error","error":{"status","code","message"}};
 * a client that hangs up cancels the pull.
 */
#pragma once

#include "http/http.h"

int v1_images_pull(struct request *req);

/* The HTTP status and error code of a pull's failure r. */
unsigned v1_image_pull_status(int r, const char **ret_code);
