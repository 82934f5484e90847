/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a build step may reach (server/template-build/README.md "Egress"): an HTTP proxy on a unix
 * socket sbxd binds into the build sandbox, where the agent's relay
 * (guest-agent/core/build-relay.h) brings apt's and pip's proxy connections from the sandbox's
 * loopback. It forwards only to the hosts it is given (the host's apt sources: plain
 * `GET http://host/...` to port 80, `CONNECT host:443`); anything else is answered 403 with a
 * message naming the host. The request head is read (at most BUILD_REQUEST_HEAD_MAX bytes,
 * policy/build-request.h) and checked; a plain request goes to the mirror with the mirror's
 * own name as Host (a Host naming another site is refused), its Content-Length body, nothing
 * more of the client's; the response comes back with "Connection: close" (one request per
 * client connection: a pipelined request is never forwarded, and logged when it would be
 * refused). A CONNECT tunnel carries only TLS asking for the mirror's name.
 */
#pragma once

#include <stddef.h>

#define EGRESS_MAX_CONNECTIONS 32 /* per build; more are closed */
#define EGRESS_IDLE_MS         120000
#define EGRESS_CONNECT_MS      10000

struct build_egress;
/* Called (from a connection's thread) with each refusal and each mirror that could not be
 * reached, so that the build's log names them. */
typedef void (*build_egress_note_fn)(void *userdata, const char *message);
/* Serves lfd (a listening unix socket sbxd bound in the build's run dir, owned from here on) from
 * a thread, for the n_allow hosts of allow (copied). */
int build_egress_start(int lfd, char *const *allow, size_t n_allow, build_egress_note_fn note,
                       void *userdata, struct build_egress **ret);
/* Stops accepting; no note is made after it returns. Connections in flight end on their own
 * (the last one frees what they share). Accepts NULL. */
void build_egress_stop(struct build_egress *e);
