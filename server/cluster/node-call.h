/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Calls from this node to another on the node-only routes (/v1/cluster/..., and a drain
 * handed to the drained node): libcurl, HTTP/1.1 to the other node's advertised address,
 * authenticated with this node's first API key as a Bearer token (every node holds the same
 * key file, server/cluster/README.md) and marked with CLUSTER_HOP_HEADER so the other node
 * answers itself. Two shapes: buffered (a small JSON answer) and streamed into a file
 * descriptor (a layer).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/server.h"

#define NODE_CALL_CONNECT_MS 2000
#define NODE_CALL_MAX_ANSWER (4 * 1024 * 1024) /* a buffered answer (template, adopt, drain) */

struct node_answer {
        long status; /* 0: no answer (connect failure, timeout, answer too large) */
        char *body;  /* NUL-terminated, may be NULL */
        size_t len;
        char error[256]; /* curl's reason when status is 0 */
};

/* method target (e.g. "/v1/cluster/templates/x") on addr ("host:port"), body (may be NULL,
 * JSON), waiting at most timeout_ms. -ENOMEM only; a failure to reach the node is status 0. */
int node_call(struct server *srv, const char *addr, const char *method, const char *target,
              const char *body, size_t len, long timeout_ms, struct node_answer *ret);
void node_answer_done(struct node_answer *a);

/* GET target on addr, the answer's body written to fd as it arrives (at most max_bytes, at
 * most timeout_s in all, aborted when it stalls for NODE_CALL_STALL_S); fd is closed at the
 * end. 0 on a complete 200 answer, else -errno with the reason in err. *ret_bytes: bytes
 * received. */
#define NODE_CALL_STALL_S 30
int node_stream(struct server *srv, const char *addr, const char *target, int fd,
                uint64_t max_bytes, long timeout_s, uint64_t *ret_bytes, char *err, size_t errlen);
