/* SPDX-License-Identifier: Apache-2.0 */
/*
 * put_file / upload_file and get_file: bytes into and out of the session's sandbox through the
 * native API's files operation (/v1/sandboxes/{id}/files?path=...), read with hard bounds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp-internal.h"
#include "url-util.h"

#define MCP_MAX_GET_TEXT    (1024 * 1024)     /* get_file as text */
#define MCP_MAX_GET_BLOB    (5 * 1024 * 1024) /* get_file as image / blob */
#define MCP_FILE_TIMEOUT_MS 60000

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *base64_encode(const uint8_t *in, size_t len)
{
        char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0) |
                             (i + 2 < len ? in[i + 2] : 0);
                *o++ = b64[v >> 18 & 63];
                *o++ = b64[v >> 12 & 63];
                *o++ = i + 1 < len ? b64[v >> 6 & 63] : '=';
                *o++ = i + 2 < len ? b64[v & 63] : '=';
        }
        *o = 0;
        return out;
}

static int base64_decode(const char *in, uint8_t **ret, size_t *ret_len)
{
        size_t n = strlen(in), k = 0;
        uint8_t *out = malloc(n / 4 * 3 + 3);
        uint32_t acc = 0;
        int bits = 0;
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *p = in[i] ? strchr(b64, in[i]) : NULL;
                if (in[i] == '=' || in[i] == '\n' || in[i] == '\r')
                        continue;
                if (!p) {
                        free(out);
                        return -EINVAL;
                }
                acc = acc << 6 | (uint32_t)(p - b64);
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[k++] = (uint8_t)(acc >> bits);
                }
        }
        *ret = out;
        *ret_len = k;
        return 0;
}

/* A file call that failed: the agent's own message (its {"error":{"code","message"}}), or the
 * local error when there was no answer. */
static cJSON *file_failure(const char *what, const char *path, int r, const struct mcp_reply *rep)
{
        char msg[1025];
        if (r < 0)
                snprintf(msg, sizeof(msg), "%s", strerror(-r));
        else
                mcp_error_message(rep->body ? rep->body : "", rep->len, msg);
        return mcp_failure("%s %.256s failed: %.512s", what, path, msg);
}

cJSON *mcp_tool_put_file(struct mcp_call *c, const cJSON *args, const char **ret_msg)
{
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(args, "path");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(args, "content");
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(args, "content_base64");
        _cleanup_free_ uint8_t *bytes = NULL;
        _cleanup_free_ char *query = NULL;
        size_t len;
        if (!cJSON_IsString(path) || !*path->valuestring) {
                *ret_msg = "path must be a non-empty string";
                return NULL;
        }
        if (cJSON_IsString(b)) {
                if (base64_decode(b->valuestring, &bytes, &len) < 0) {
                        *ret_msg = "content_base64 is not valid base64";
                        return NULL;
                }
        } else if (cJSON_IsString(text)) {
                bytes = (uint8_t *)strdup(text->valuestring);
                len = strlen(text->valuestring);
        } else {
                *ret_msg = "give content (text) or content_base64 (bytes)";
                return NULL;
        }
        const char *note = NULL;
        cJSON *fail = mcp_ensure_sandbox(c, MCP_FILE_TIMEOUT_MS, &note);
        if (fail)
                return fail;
        url_query_append(&query, "path", path->valuestring);
        struct mcp_reply rep;
        int r = mcp_native_call(c, NULL, "PUT", "/files", query, "application/octet-stream", bytes,
                                len, MCP_MAX_ERROR_BODY, MCP_FILE_TIMEOUT_MS, &rep);
        mcp_touch(c);
        _cleanup_json_ cJSON *o = r == 200 && json_depth(rep.body, rep.len) <= MCP_JSON_MAX_DEPTH
                                      ? cJSON_ParseWithLength(rep.body, rep.len)
                                      : NULL;
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(o, 0), "path");
        cJSON *res;
        if (!cJSON_IsString(w))
                res = file_failure("put_failed: writing", path->valuestring, r, &rep);
        else {
                char msg[600];
                snprintf(msg, sizeof(msg), "%sWrote %zu bytes to %.512s", note ? note : "", len,
                         w->valuestring);
                res = mcp_text_result(msg, false);
                cJSON *sc = cJSON_AddObjectToObject(res, "structuredContent");
                cJSON_AddStringToObject(sc, "path", w->valuestring);
                cJSON_AddNumberToObject(sc, "bytes", (double)len);
        }
        mcp_reply_done(&rep);
        return res;
}

static bool utf8_text(const uint8_t *s, size_t n)
{
        for (size_t i = 0; i < n;) {
                uint8_t ch = s[i];
                size_t k = ch < 0x80         ? 1
                           : (ch >> 5) == 6  ? 2
                           : (ch >> 4) == 14 ? 3
                           : (ch >> 3) == 30 ? 4
                                             : 0;
                if (k == 0 || ch == 0 || i + k > n)
                        return false;
                for (size_t j = 1; j < k; j++)
                        if ((s[i + j] & 0xc0) != 0x80)
                                return false;
                i += k;
        }
        return true;
}

static cJSON *file_content(const char *path, const char *ctype, const uint8_t *d, size_t n)
{
        bool image = strncmp(ctype, "image/", 6) == 0;
        if (!image && utf8_text(d, n)) {
                if (n > MCP_MAX_GET_TEXT)
                        return mcp_failure(
                            "get_failed: %.256s is %zu bytes, too large to read into "
                            "the conversation: process it with run_python instead",
                            path, n);
                _cleanup_free_ char *t = strndup((const char *)d, n);
                return t ? mcp_text_result(t, false) : NULL;
        }
        _cleanup_free_ char *enc = base64_encode(d, n);
        cJSON *o = cJSON_CreateObject(), *content = cJSON_AddArrayToObject(o, "content");
        cJSON *item = cJSON_CreateObject();
        cJSON_AddItemToArray(content, item);
        if (image) {
                cJSON_AddStringToObject(item, "type", "image");
                cJSON_AddStringToObject(item, "data", enc);
                cJSON_AddStringToObject(item, "mimeType", ctype);
        } else {
                char uri[4200];
                snprintf(uri, sizeof(uri), "file://%s", path);
                cJSON_AddStringToObject(item, "type", "resource");
                cJSON *res = cJSON_AddObjectToObject(item, "resource");
                cJSON_AddStringToObject(res, "uri", uri);
                cJSON_AddStringToObject(res, "mimeType", ctype);
                cJSON_AddStringToObject(res, "blob", enc);
        }
        cJSON_AddBoolToObject(o, "isError", false);
        return o;
}

static bool ctype_ok(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 100)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] <= ' ' || s[i] > '~' || s[i] == ';' || s[i] == '"')
                        return false;
        return strchr(s, '/') != NULL;
}

cJSON *mcp_tool_get_file(struct mcp_call *c, const cJSON *args, const char **ret_msg)
{
        const cJSON *path = cJSON_GetObjectItemCaseSensitive(args, "path");
        const cJSON *ct = cJSON_GetObjectItemCaseSensitive(args, "content_type");
        _cleanup_free_ char *query = NULL;
        if (!cJSON_IsString(path) || !*path->valuestring) {
                *ret_msg = "path must be a non-empty string";
                return NULL;
        }
        const char *note = NULL;
        cJSON *fail = mcp_ensure_sandbox(c, MCP_FILE_TIMEOUT_MS, &note);
        if (fail)
                return fail;
        if (note)
                return mcp_failure("get_failed: %sThere is no %.256s in the new sandbox.", note,
                                   path->valuestring);
        url_query_append(&query, "path", path->valuestring);
        struct mcp_reply rep;
        int r = mcp_native_call(c, NULL, "GET", "/files", query, NULL, NULL, 0, MCP_MAX_GET_BLOB,
                                MCP_FILE_TIMEOUT_MS, &rep);
        mcp_touch(c);
        cJSON *res;
        if (r == -EMSGSIZE)
                res = mcp_failure("get_failed: %.256s is larger than %d bytes: process it with "
                                  "run_python instead of reading it into the conversation",
                                  path->valuestring, MCP_MAX_GET_BLOB);
        else if (r != 200)
                res = file_failure("get_failed: reading", path->valuestring, r, &rep);
        else {
                char type[128];
                const char *want = cJSON_IsString(ct) && *ct->valuestring ? ct->valuestring : NULL;
                snprintf(type, sizeof(type), "%s", want ? want : rep.content_type);
                type[strcspn(type, ";")] = 0;
                if (!ctype_ok(type))
                        snprintf(type, sizeof(type), "application/octet-stream");
                res = file_content(path->valuestring, type, (uint8_t *)rep.body, rep.len);
        }
        mcp_reply_done(&rep);
        return res;
}
