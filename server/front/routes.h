/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbxd's one route table: the E2B control plane, the native /v1 API and /mcp, each row with
 * its method(s), path pattern, auth kind, body handling and handlers (http/route.h). Requests
 * for a sandbox (E2b-Sandbox-Id/Port headers, a "<port>-<id>." Host, a signed /files URL) are
 * classified before it and go to the proxy (e2b/proxy.h).
 */
#pragma once

#include <stddef.h>

#include "http/route.h"

extern const struct route sbxd_routes[];
extern const size_t sbxd_n_routes;
