/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The session's sandbox (created on demand, its idle timeout pushed by every call), the shape
 * of a CallToolResult, and MCP's bounded calls into the sandbox through the host
 * (struct mcp_host). What comes back is untrusted: read with hard bounds and parsed with a
 * depth check; only the expected fields with the expected types are used.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "format-util.h"
#include "mcp-internal.h"

cJSON *mcp_text_result(const char *text, bool is_error)
{
        cJSON *o = cJSON_CreateObject();
        cJSON *content = cJSON_AddArrayToObject(o, "content");
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "type", "text");
        cJSON_AddStringToObject(t, "text", text);
        cJSON_AddItemToArray(content, t);
        cJSON_AddBoolToObject(o, "isError", is_error);
        return o;
}

cJSON *mcp_failure(const char *fmt, ...)
{
        char msg[1024];
        (void)FORMAT_VARARGS(msg, sizeof(msg), fmt);
        return mcp_text_result(msg, true);
}

cJSON *mcp_cancelled_result(const char *text)
{
        cJSON *r = mcp_text_result(text, false);
        cJSON_AddBoolToObject(cJSON_AddObjectToObject(r, "structuredContent"), "cancelled", true);
        return r;
}

cJSON *mcp_ensure_sandbox(struct mcp_call *c, int call_ms, const char **note)
{
        const struct mcp_host *h = &c->m->host;
        int lifetime = c->idle_s + call_ms / 1000 + 1;
        int state = c->sandbox_id[0] ? h->state(h->ctx, c->sandbox_id) : -ENOENT;
        if (state == 1)
                return mcp_failure("sandbox_unavailable: this session's sandbox is paused; resume "
                                   "it first");
        if (state < 0) {
                char err[768] = "", id[MCP_SANDBOX_ID_MAX];
                int r = h->create(h->ctx, c->m->template_id, lifetime, id, err, sizeof(err));
                if (r < 0)
                        return mcp_failure("sandbox_unavailable: no sandbox could be started "
                                           "(%s). Try again later.",
                                           err[0] ? err : strerror(-r));
                if (c->had_sandbox)
                        *note =
                            "Note: this session's previous sandbox was reaped after being idle, "
                            "so this call ran in a fresh one: variables, files and installed "
                            "packages from earlier calls are gone.\n";
                snprintf(c->sandbox_id, sizeof(c->sandbox_id), "%s", id);
                c->had_sandbox = true;
        }
        (void)h->keep_alive(h->ctx, c->sandbox_id, lifetime);
        return NULL;
}

void mcp_touch(struct mcp_call *c)
{
        const struct mcp_host *h = &c->m->host;
        (void)h->keep_alive(h->ctx, c->sandbox_id, c->idle_s);
}

void mcp_reply_done(struct mcp_reply *r)
{
        free(r->body);
        r->body = NULL;
}

int mcp_native_call(struct mcp_call *c, const atomic_bool *cancel, const char *method,
                    const char *path, const char *query, const char *content_type, const void *body,
                    size_t len, size_t max, int timeout_ms, struct mcp_reply *ret)
{
        const struct mcp_host *h = &c->m->host;
        struct mcp_stream *st = NULL;
        struct buf b = {};
        *ret = (struct mcp_reply){0};
        int64_t deadline = now_ms() + timeout_ms;
        int r = h->open(h->ctx, c->sandbox_id, MCP_API_NATIVE, method, path, query, content_type,
                        body, len, timeout_ms, &st);
        if (r < 0)
                return r;
        /* the agent answers once the work is done; a cancel closes the request first */
        r = h->read_head(st, cancel, deadline, ret->content_type, sizeof(ret->content_type));
        if (r >= 0)
                ret->status = r;
        while (r >= 0) {
                const void *d;
                size_t n;
                r = h->read(st, NULL, 0, &d, &n);
                if (r <= 0)
                        break;
                if (b.len + n > max)
                        r = -EMSGSIZE;
                else
                        r = buf_add(&b, d, n);
        }
        h->close(st);
        if (r < 0) {
                buf_done(&b);
                return r;
        }
        ret->len = b.len;
        ret->body = b.p ? buf_steal(&b) : strdup(""); /* NUL-terminated, even when empty */
        return ret->body ? ret->status : -ENOMEM;
}

void mcp_error_message(const char *body, size_t len, char msg[static 1025])
{
        cJSON *o =
            json_depth(body, len) <= MCP_JSON_MAX_DEPTH ? cJSON_ParseWithLength(body, len) : NULL;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(cJSON_IsObject(e) ? e : o, "message");
        snprintf(msg, 1025, "%s",
                 cJSON_IsString(m) && *m->valuestring ? m->valuestring
                                                      : "the sandbox refused the request");
        cJSON_Delete(o);
}

cJSON *mcp_parse_object(const char *body, size_t len)
{
        cJSON *o =
            json_depth(body, len) <= MCP_JSON_MAX_DEPTH ? cJSON_ParseWithLength(body, len) : NULL;
        if (!cJSON_IsObject(o)) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}
