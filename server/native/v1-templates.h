/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /v1/templates: every template sbxd can start a sandbox from ({"templates":[...]},
 * storage/template-list.h; api/openapi/sbx-v1.yaml), whatever made it: the built-in ones, those
 * built through the template API, imported images, snapshots. A row of front/routes.c.
 */
#pragma once

#include "http/http.h"

int v1_templates_list(struct request *req);
