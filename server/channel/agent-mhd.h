/* SPDX-License-Identifier: Apache-2.0 */
/*
 * An agent's answer (channel/agent-req.h) handed to the HTTP client verbatim: its status, its
 * headers minus hop-by-hop ones (http_hop_by_hop()) and Content-Length and Date (MHD frames
 * the body and dates it), and its body. The sandbox proxy (e2b/proxy.c) and the /v1 relay
 * (native/v1-relay.c) answer with it.
 */
#pragma once

#include "channel/agent-req.h"
#include "http/http.h"

#define AGENT_STREAM_BLOCK (256 * 1024) /* MHD's buffer for a streamed answer */

/* Queue the answer whose head is h (already read from *q) for req. Takes *q (sets it NULL)
 * whatever happens. The body is streamed as it arrives (a Content-Length the agent announced
 * is enforced: a body that ends short or runs long ends the response with an error), except
 *  - for HEAD, 204 and 304, where it must be empty (read up to END, bounded);
 *  - when buffer_max > 0: read whole first, at most buffer_max bytes (-EMSGSIZE beyond).
 * Returns the status queued; -EPROTO for an answer that cannot be passed on (a bad
 * Content-Length, a header MHD refuses, a broken empty body), -EMSGSIZE: nothing was queued
 * then and the caller answers in its own shape; -ECONNABORTED when the client left; other
 * -errno when queueing failed. */
int agent_mhd_respond(struct request *req, struct agent_req **q, const struct sbx_resp_head *h,
                      size_t buffer_max);
