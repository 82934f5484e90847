/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An upgraded forward (a WebSocket: the native terminal, a `<port>-<id>` host's WebSocket to a
 * sandbox port): the owner's 101 handed to the client, then the client's socket (taken from
 * libmicrohttpd) and the connection to the owner spliced as raw bytes, both ways, on a thread
 * of its own, until either side closes. One side's end of input is passed on as a half-close
 * (shutdown for writing) and the other direction goes on; the relay ends once both are done,
 * on an error, after FORWARD_UPGRADE_IDLE_MS without a byte either way, or when sbxd stops.
 */
#pragma once

#include <stdbool.h>

#include "cluster/owner-conn.h"
#include "http/http.h"

#define FORWARD_UPGRADE_MAX     256 /* upgraded relays at once on this node; past it 503 */
#define FORWARD_UPGRADE_IDLE_MS (15 * 60 * 1000) /* no byte either way this long: closed */
#define FORWARD_UPGRADE_CHUNK   (64 * 1024)      /* one read */
#define FORWARD_UPGRADE_SEND_MS 60000            /* one write may wait this long */
#define FORWARD_UPGRADE_STACK   (256 * 1024)     /* the relay's thread */

/* Count one more upgraded relay (false at FORWARD_UPGRADE_MAX) / one less. */
bool forward_upgrade_reserve(void);
void forward_upgrade_unreserve(void);
/* Upgraded relays in progress (reserved ones included). */
unsigned forward_upgrade_active(void);

struct forward_splice;

/* Queue the owner's 101 (head h, read from c) for req with h's headers minus Content-Length,
 * Date and hop-by-hop ones but Upgrade (libmicrohttpd adds `Connection: Upgrade`); once sent,
 * the splice runs. Takes c and one reservation whatever happens. Returns 101 (*ret: the
 * request's reference, for forward_upgrade_drop() when the request ends) or -errno. */
int forward_upgrade_queue(struct request *req, struct owner_conn *c, const struct owner_head *h,
                          struct forward_splice **ret);
/* The request is over: a splice never started (the 101 did not go out) is freed, its
 * connection closed and its reservation returned; a started one goes on. NULL: nothing. */
void forward_upgrade_drop(struct forward_splice *s);
