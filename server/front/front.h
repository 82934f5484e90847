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

struct front;

/* Listen (the gate, front/gate.h) and start libmicrohttpd; *ret_port: the port bound. */
int front_start(struct server *srv, struct front **ret, uint16_t *ret_port);
/* Stop accepting (graceful stop): requests in progress go on. */
void front_quiesce(struct front *f);
/* Close everything and free. NULL: nothing. */
void front_stop(struct front *f);
