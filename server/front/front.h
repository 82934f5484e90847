/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The front door: the libmicrohttpd daemon and the dispatch of every request to its handler
 * (the sandbox proxy, the native API and MCP, the E2B control plane). The only module that
 * knows all the others; nothing includes it but main.c.
 */
#pragma once

#include <microhttpd.h>
#include <stdint.h>

#include "core/server.h"

int http_start(struct server *srv, struct MHD_Daemon **ret, uint16_t *ret_port);
