/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An agent's 101 Switching Protocols handed to the HTTP client, then the connection relayed
 * raw both ways (a WebSocket to a server in the sandbox: e2b/proxy.c). sbxd takes the client's
 * socket from libmicrohttpd (an upgrade response), sends what the client writes as DATA frames
 * and writes the agent's DATA frames to the client, looking at none of it.
 *
 * The exchange ends when the agent sends END (or its connection breaks: the client's socket
 * is closed), or when sbxd stops. A client that stops writing gets END sent to the agent and
 * still receives until the agent ends, for AGENT_UPGRADE_LINGER_MS at most; one whose connection
 * is reset ends the exchange at once (the agent's connection is closed).
 */
#pragma once

#include "channel/agent-req.h"
#include "http/http.h"
#include "http/upgrade.h"

#define AGENT_UPGRADE_CHUNK     (64 * 1024) /* one read from the client */
#define AGENT_UPGRADE_SEND_MS   60000 /* a write to the agent or the client may block this long */
#define AGENT_UPGRADE_LINGER_MS 60000 /* after the client stopped writing: the agent's END */
#define AGENT_UPGRADE_STACK     (256 * 1024) /* an upgraded connection's own thread */

/* A connection libmicrohttpd hands over after a 101, and the agent request behind it. */
struct agent_upgraded {
        struct http_upgrade up;                /* the client's side: up.sock, up.extra, up.name */
        struct agent_req *q;                   /* owned: freed once run returns */
        void (*run)(struct agent_upgraded *u); /* the exchange, in the thread */
        void (*done)(void *arg);               /* once the exchange is over (NULL: none) */
        void *done_arg;
};

/* A 101 response (the caller adds its headers and queues it with agent_upgrade_queue()) whose
 * upgrade runs run(u) in a detached thread of its own, AGENT_UPGRADE_STACK deep
 * (http/upgrade.h); then the client's connection is closed, u->q freed, u->done called and u
 * freed. *ret_u is u: the caller hands it the agent request (u->q). NULL when out of memory. */
struct MHD_Response *agent_upgrade_response(void (*run)(struct agent_upgraded *u), const char *name,
                                            struct agent_upgraded **ret_u);

/* Queue resp (agent_upgrade_response()'s, destroyed here) for req. 101: u is released once,
 * after the exchange or when the request ends with the 101 never sent (the client left first:
 * u->q freed, u->done called). -EIO when nothing was queued: u->q and u are freed, u->done not
 * called. */
int agent_upgrade_queue(struct request *req, struct agent_upgraded *u, struct MHD_Response *resp);

/* Queue the 101 whose head is h (already read from *q) for req, with h's headers minus
 * Content-Length and Date and hop-by-hop ones but Upgrade; MHD adds `Connection: Upgrade`.
 * Takes *q (sets it NULL) whatever happens. done(done_arg) (done may be NULL) is called once
 * the upgraded exchange is over, or once the request ends with the 101 never sent; when
 * nothing was queued it is not called and this returns -errno (the caller still owns what done
 * would release). Returns 101. */
int agent_mhd_upgrade(struct request *req, struct agent_req **q, const struct sbx_resp_head *h,
                      void (*done)(void *arg), void *done_arg);
