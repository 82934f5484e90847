/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Forwarding a sandbox-port request to the sandbox's agent (api/frames.md): one new unix
 * connection per request; REQ_HEAD, then each upload chunk as DATA frames as MHD hands it
 * over, END; then RESP_HEAD and DATA frames streamed back from MHD's content-reader callback,
 * blocking for the next frame and returning whatever arrived at once (no buffering beyond one
 * frame). A client that hangs up aborts the exchange (the agent connection is closed).
 *
 * Refusals: unknown/missing sandbox 502 {"sandboxId","message":"The sandbox was not found",
 * "code":502} (E2B's edge proxy answer; the SDKs map 502 to "sandbox timeout"); /init 404;
 * envd (49983) without X-Access-Token == envdAccessToken 401, except GET /health; agent
 * unreachable or broken mid-head 502.
 */
#pragma once

#include "http/http.h"

#define PROXY_SEND_TIMEOUT_MS 60000
#define PROXY_STREAM_BLOCK    (256 * 1024)

enum MHD_Result proxy_begin(struct request *req);
enum MHD_Result proxy_upload(struct request *req, const char *data, size_t len);
enum MHD_Result proxy_finish(struct request *req);
void proxy_free(struct proxy_conn *p);

/* Make blocked proxy reads give up (within a second) so the HTTP daemon can stop. */
void proxy_shutdown(void);

/* Whether a request/response header is hop-by-hop (never forwarded). */
bool proxy_hop_by_hop(const char *name);
