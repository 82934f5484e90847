/* SPDX-License-Identifier: Apache-2.0 */
/* sbxd's start and stop, in order (daemon.c); main.c runs the loop between them. */
#pragma once

#include <stdint.h>

#include "core/server.h"

struct front;
struct host_claims;

struct daemon {
        struct sbxd_config cfg;
        struct server srv;
        struct front *front;
        struct host_claims *host; /* core/host-claim.h: what this sbxd shares with others */
        uint16_t port;
        unsigned adopted; /* sandboxes an earlier sbxd left running, taken over */
};

/* Everything from the state dir to the announced URL: adoption, services, the listener, the
 * cluster. -errno, logged, with whatever started stopped again. */
int daemon_start(struct daemon *d);

/* The graceful stop: requests drained, services stopped, records saved; sandboxes keep
 * running. */
void daemon_stop(struct daemon *d);
