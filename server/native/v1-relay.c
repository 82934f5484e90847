/* SPDX-License-Identifier: Apache-2.0 */
#include "native/v1-relay.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel/agent-mhd.h"
#include "channel/agent-req.h"
#include "core/query.h"
#include "core/validate.h"
#include "frame.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"

static void relay_free(void *q)
{
        agent_req_free(q);
}

int v1_relay_begin(struct request *req)
{
        const char *id = req->args.v[0], *op = req->args.tail;
        char path[V1_RELAY_MAX_PATH];
        if ((size_t)snprintf(path, sizeof(path), "/v1%s", op) >= sizeof(path))
                return v1_reply_error(req, 404, NULL, "no such route");
        int status;
        _cleanup_sandbox_ struct sandbox *s = v1_running_sandbox(req, id, &status);
        if (!s)
                return status;
        _cleanup_free_ char *query = NULL;
        if (query_from_target(req->target, &query) < 0)
                return -ENOMEM;
        /* File writes are raw bytes whatever the client labelled them; other bodies JSON. */
        struct agent_head h;
        agent_head_init(&h, SBX_PORT_INTERNAL, req->method, path, query,
                        strcmp(op, "/files") == 0 ? "application/octet-stream"
                                                  : "application/json");
        struct agent_req_opts o = {.timeout_ms = V1_RELAY_TIMEOUT_MS};
        struct agent_req *q = NULL;
        int r = agent_req_open(s->dir, &h.h, &o, &q);
        if (r < 0) {
                log_warning_errno(r, "req=%s sandbox %s: agent: %m", req->rid, s->id);
                return v1_reply_error(req, 502, "sandbox_unavailable",
                                      "the sandbox %s is not reachable", s->id);
        }
        agent_req_watch_client(q, http_client_fd(req));
        req->state = q;
        req->state_free = relay_free;
        return 0;
}

int v1_relay_upload(struct request *req, const char *data, size_t len)
{
        /* The agent may answer before the whole body (a refusal): sending stops then. */
        (void)agent_req_send(req->state, data, len);
        return 0;
}

int v1_relay_finish(struct request *req)
{
        struct agent_req *q = req->state;
        struct sbx_resp_head h = {};
        (void)agent_req_end(q);
        int r = agent_req_read_head(q, &h);
        if (r >= 0 && (h.status < 200 || h.status > 599))
                r = -EPROTO;
        if (r < 0) {
                sbx_resp_head_free(&h);
                if (r == -ECONNABORTED)
                        return r;
                return v1_reply_error(req, 502, "sandbox_unavailable",
                                      "the sandbox closed the connection");
        }
        req->state = NULL; /* agent_mhd_respond() takes it */
        r = agent_mhd_respond(req, &q, &h, h.status >= 400 ? V1_RELAY_MAX_ERROR : 0);
        sbx_resp_head_free(&h);
        if (r == -EPROTO || r == -EMSGSIZE)
                return v1_reply_error(req, 502, "sandbox_unavailable",
                                      "invalid answer from the sandbox");
        return r;
}
