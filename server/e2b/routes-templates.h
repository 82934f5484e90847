/* SPDX-License-Identifier: Apache-2.0 */
/*
 * E2B's template build API (docs/e2b-wire.md §2.8), rows of the route table (front/routes.c;
 * X-API-KEY checked there, but for the upload, whose link carries its own token):
 *   POST   /v3/templates                           202 TemplateRequestResponseV3
 *   GET    /templates/{id}/files/{hash}            201 TemplateBuildFileUpload
 *   PUT    /build-uploads/{id}/{hash}?expires&token 200 (the upload link's target)
 *   POST   /v2/templates/{id}/builds/{buildID}     202 (TemplateBuildStartV2)
 *   GET    /templates/{id}/builds/{buildID}/status 200 TemplateBuildInfo (?logsOffset)
 *   GET    /templates/aliases/{alias}              200 TemplateAliasResponse; 404
 *   POST   /templates/tags                         201 AssignedTemplateTags
 *   DELETE /templates/tags                         204
 *   GET    /templates/{id}/tags                    200 [TemplateTag]
 *   GET    /templates                              200 [Template]
 *   GET    /templates/{id}                         200 TemplateWithBuilds
 * DELETE /templates/{id} (routes-lifecycle.h) removes a built template too.
 */
#pragma once

#include "http/http.h"

int e2b_build_request(struct request *req);
int e2b_build_file_link(struct request *req);
int e2b_build_upload_begin(struct request *req);
int e2b_build_upload_finish(struct request *req);
int e2b_build_start(struct request *req);
int e2b_build_status(struct request *req);
int e2b_template_alias(struct request *req);
int e2b_template_tags_assign(struct request *req);
int e2b_template_tags_remove(struct request *req);
int e2b_template_tags_list(struct request *req);
int e2b_template_list(struct request *req);
int e2b_template_get(struct request *req);
/* DELETE /templates/{id} of a built template: -ENOENT (nothing answered) when it is not one. */
int e2b_build_delete(struct request *req);
