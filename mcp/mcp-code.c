/* SPDX-License-Identifier: Apache-2.0 */
/*
 * run_python and run_node: one execution on the session sandbox's code interpreter (its
 * /execute, the way the E2B SDK's runCode reaches it), in the default context of the language,
 * so variables, imports and definitions persist between a model's calls exactly as they do
 * for an E2B `runCode`. The stream is read by mcp-ndjson.c. Past the deadline MCP closes the
 * request: the sandbox interrupts the kernel (KeyboardInterrupt in Python), whose state is
 * kept.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mcp-internal.h"
#include "mcp-ndjson.h"

#define CODE_HEAD_GRACE_MS   5000 /* an interrupted execution may still hold the context */
#define CODE_READ_TIMEOUT_MS 15000

cJSON *mcp_run_code(struct mcp_call *c, const char *language, const char *code, int timeout_ms)
{
        const struct mcp_host *h = &c->m->host;
        const char *note = NULL;
        _cleanup_json_ cJSON *body = cJSON_CreateObject();
        _cleanup_free_ char *text = NULL;
        struct mcp_stream *st = NULL;
        struct mcp_exec x;
        char ctype[128];

        cJSON *fail = mcp_ensure_sandbox(c, timeout_ms, &note);
        if (fail)
                return fail;
        cJSON_AddStringToObject(body, "code", code);
        cJSON_AddStringToObject(body, "language", language);
        text = cJSON_PrintUnformatted(body);
        if (!text || mcp_exec_init(&x) < 0)
                return NULL;
        int64_t deadline = now_ms() + timeout_ms;
        int r = h->open(h->ctx, c->sandbox_id, MCP_API_CODE, "POST", "/execute", NULL,
                        "application/json", text, strlen(text), CODE_READ_TIMEOUT_MS, &st);
        if (r >= 0)
                r = h->read_head(st, NULL, deadline + CODE_HEAD_GRACE_MS, ctype, sizeof(ctype));
        if (r >= 0 && r != 200) {
                struct buf err = {};
                const void *d;
                size_t n;
                while (err.len < MCP_MAX_ERROR_BODY && h->read(st, NULL, 0, &d, &n) > 0)
                        (void)buf_add(&err, d, MIN(n, MCP_MAX_ERROR_BODY - err.len));
                char msg[1025];
                mcp_error_message(buf_str(&err), err.len, msg);
                buf_done(&err);
                h->close(st);
                mcp_touch(c);
                mcp_exec_done(&x);
                return mcp_failure("code_unavailable: the sandbox cannot run %s code: %s (run "
                                   "it with run_shell instead)",
                                   language, msg);
        }
        /* the stream until its end, the deadline (-ETIMEDOUT) or a cancel (-ECANCELED) */
        while (r >= 0) {
                const void *d;
                size_t n;
                r = h->read(st, c->cancel, deadline, &d, &n);
                if (r <= 0)
                        break;
                mcp_exec_feed(&x, d, n);
        }
        /* On a timeout or a cancel, closing the request makes the sandbox interrupt the
         * kernel. */
        if (st)
                h->close(st);
        mcp_touch(c);
        if (r < 0 && r != -ETIMEDOUT && r != -ECANCELED) {
                log_warning_errno(r, "mcp: sandbox %s: execute: %m", c->sandbox_id);
                mcp_exec_done(&x);
                return mcp_failure("The sandbox did not answer (%s). Try again; if it keeps "
                                   "failing the sandbox may have run out of memory.",
                                   strerror(-r));
        }
        cJSON *ret = mcp_exec_result(&x, note, language, r, timeout_ms);
        mcp_exec_done(&x);
        return ret;
}
