/* SPDX-License-Identifier: Apache-2.0 */
/*
 * process.Process/Connect (re-attach, docs/e2b-wire.md §3.5): attach to a running or finished
 * process by pid or tag (agent_proc_attach()) and stream it as Start does: `start` with the pid,
 * the retained output, live output, keepalives, then `end` and the end of the stream.
 * Connect-Timeout-Ms ends this stream (deadline_exceeded), not the process.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "envd/connect-json.h"
#include "envd/process-rpc.h"
#include "envd/process-stream.h"
#include "json-util.h"
#include "macros.h"
#include "proc/process.h"

/* {"process":{"pid":N}} or {"process":{"tag":"x"}}. */
static int connect_selector(const cJSON *root, struct agent_selector *ret)
{
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "process");
        const cJSON *pj = cJSON_GetObjectItemCaseSensitive(p, "pid");
        const cJSON *tj = cJSON_GetObjectItemCaseSensitive(p, "tag");

        *ret = (struct agent_selector){0};
        if (cJSON_IsString(tj))
                ret->tag = tj->valuestring;
        else if (cJSON_IsNumber(pj) && pj->valuedouble >= 1 && pj->valuedouble <= UINT32_MAX)
                ret->pid = (uint32_t)pj->valuedouble;
        else
                return -EINVAL;
        return 0;
}

int agent_process_handle_connect(struct agent_request *r)
{
        _cleanup_free_ uint8_t *body = NULL;
        _cleanup_free_ char *unknown = NULL;
        _cleanup_json_ cJSON *root = NULL;
        struct agent_selector sel;
        const uint8_t *msg;
        uint32_t msg_len;
        int64_t timeout_ms;
        int e;

        e = agent_request_read_envelope(r, &body, &msg, &msg_len);
        if (e != 0)
                return e;
        if (agent_request_basic_user_unknown(r, &unknown))
                return agent_respond_stream_error(r, "unauthenticated", "invalid username: '%s'",
                                                  unknown ? unknown : "");
        root = cJSON_ParseWithLength((const char *)msg, msg_len);
        if (!cJSON_IsObject(root))
                return agent_respond_stream_error(r, "invalid_argument", "invalid JSON request");
        if (connect_selector(root, &sel) < 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "process selector (pid or tag) is required");
        if (agent_parse_connect_timeout(agent_request_header(r, "Connect-Timeout-Ms"),
                                        &timeout_ms) < 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "invalid Connect-Timeout-Ms header");

        struct agent_process_stream s;
        agent_process_stream_init(&s, r, timeout_ms, false);
        const struct agent_proc_listener l = agent_process_stream_listener(&s);
        e = agent_proc_attach(&sel, &l);
        if (e == -ESRCH) {
                if (sel.tag)
                        return agent_respond_stream_error(r, "not_found",
                                                          "process with tag %s not found", sel.tag);
                return agent_respond_stream_error(r, "not_found", "process with pid %u not found",
                                                  sel.pid);
        }
        if (e == -ENOMEM && r->resp_started)
                return agent_respond_stream_error(r, "internal", "out of memory");
        return e;
}
