/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Forwarding a sandbox-port request to the sandbox's agent (api/frames.md) with the channel
 * API (channel/agent-req.h): one new unix connection per request; REQ_HEAD, then each upload
 * chunk as DATA frames as MHD hands it over, END; then the answer streamed back verbatim
 * (channel/agent-mhd.h) from MHD's content-reader callback. A client that hangs up aborts the
 * exchange (the agent connection is closed).
 *
 * Refusals: unknown/missing sandbox 502 {"sandboxId","message":"The sandbox was not found",
 * "code":502} (E2B's edge proxy answer; the SDKs map 502 to "sandbox timeout"); /init 404;
 * envd (49983) without X-Access-Token == envdAccessToken 401, except GET /health and a signed
 * GET/POST /files, which get envd's own 401s (e2b/files-signature.h); a paused sandbox 502,
 * or, when it has autoResume, 403 PROXY_RESUME_DENIED_MESSAGE unless the request is let in and
 * (envd) carries the token or a valid signature: only such a request resumes it; agent
 * unreachable or broken mid-head 502. A request let in by its signature alone reaches the
 * agent without its Authorization header: the signed `username` decides the user.
 *
 * front/front.c classifies a request as proxied (http/route.h route_classify(), or a signed
 * /files URL) before the route table and calls these instead; the state lives in req->state.
 */
#pragma once

#include "http/http.h"

#define PROXY_SEND_TIMEOUT_MS 60000
/* WebSockets (upgrades to a user port) open at once to one sandbox; past it a new one is a 429.
 * Below the agent's connections for user ports (AGENT_MAX_CONNECTIONS less the reserve it keeps
 * for envd and sbxd's own calls, guest-agent/core/server.h). */
#define PROXY_MAX_UPGRADES 192
/* E2B's proxy, refusing an auto-resume for the credentials a request carries. */
#define PROXY_RESUME_DENIED_MESSAGE                                                                \
        "This sandbox can't be resumed with the credentials provided. Check your access token "    \
        "and try again."

/* Handlers return their status (http/http.h). */
int proxy_begin(struct request *req, const struct route_target *t);
int proxy_upload(struct request *req, const char *data, size_t len);
int proxy_finish(struct request *req);
