/* SPDX-License-Identifier: Apache-2.0 */
#include "channel/agent-client.h"
#include "channel/agent-req.h"

#include <errno.h>
#include <string.h>

#include "buf.h"
#include "frame.h"

int agent_call_internal(const char *sandbox_dir, const char *method, const char *path,
                        const char *body, int deadline_ms)
{
        struct agent_head h;
        struct agent_req_opts o = {.timeout_ms = deadline_ms, .connect_retry_ms = deadline_ms};
        struct buf answer = {};
        agent_head_init(&h, SBX_PORT_INTERNAL, method, path, "", body ? "application/json" : NULL);
        int r = agent_req_call(sandbox_dir, &h.h, body, body ? strlen(body) : 0,
                               AGENT_INTERNAL_MAX_BODY, &o, &answer, NULL, 0);
        buf_done(&answer);
        return r == -EMSGSIZE ? -EPROTO : r;
}
