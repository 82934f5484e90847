/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /health, without a key: whether sbxd answers, its version, and the templates' state,
 * for load balancers, probes and operators:
 *   200 {"status":"ok","version":"0.1.0+git507.g5018d85","templates":"ready"}
 * "templates": "building" while templates/build-all.sh builds them (sbx-templates.service),
 * "missing" when the default template "base" is not built, "ready" otherwise.
 */
#pragma once

#include "http/http.h"

int health_handle(struct request *req);
