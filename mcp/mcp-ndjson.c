/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code interpreter's NDJSON stream (docs/e2b-wire.md §4.1), read line by line as untrusted
 * input with bounds: stdout + stderr up to MCP_MAX_OUTPUT, one line up to CODE_MAX_LINE, at
 * most CODE_MAX_IMAGES png/jpeg results (CODE_MAX_IMAGE_BYTES of base64 each), which come back
 * as image content a model can look at; then the CallToolResult of the execution.
 */
#include "mcp-ndjson.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp-internal.h"

int mcp_exec_init(struct mcp_exec *x)
{
        *x = (struct mcp_exec){.images = cJSON_CreateArray(), .result_list = cJSON_CreateArray()};
        if (!x->images || !x->result_list) {
                mcp_exec_done(x);
                return -ENOMEM;
        }
        return 0;
}

void mcp_exec_done(struct mcp_exec *x)
{
        for (size_t i = 0; i < 2; i++)
                buf_done(&x->out[i]);
        buf_done(&x->results);
        buf_done(&x->traceback);
        buf_done(&x->line);
        cJSON_Delete(x->images);
        cJSON_Delete(x->result_list);
        cJSON_Delete(x->error);
        *x = (struct mcp_exec){0};
}

static const char *str_field(const cJSON *o, const char *name)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Append to one of the texts a model reads; all of them share MCP_MAX_OUTPUT. */
static void add_text(struct mcp_exec *x, struct buf *b, const char *text, size_t n)
{
        size_t used = x->out[0].len + x->out[1].len + x->results.len;
        size_t room = MCP_MAX_OUTPUT - MIN((size_t)MCP_MAX_OUTPUT, used);
        if (n > room) {
                x->dropped += n - room;
                n = room;
        }
        if (n && buf_add(b, text, n) < 0)
                x->dropped += n;
}

static bool base64_plausible(const char *s)
{
        size_t n = strlen(s);
        return n > 0 && n <= CODE_MAX_IMAGE_BYTES &&
               strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
                         "nopqrstuvwxyz0123456789+/=\r\n") == n;
}

/* A result line: its text for the model, a summary, and a png/jpeg as image content. */
static void add_result(struct mcp_exec *x, const cJSON *o)
{
        static const char *const formats[] = {"text", "html",  "markdown", "svg",
                                              "png",  "jpeg",  "pdf",      "latex",
                                              "json", "chart", "data",     "javascript"};
        const char *text = str_field(o, "text"), *md = str_field(o, "markdown");
        bool main_result = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "is_main_result"));
        cJSON *summary = cJSON_CreateObject(), *fmts = cJSON_AddArrayToObject(summary, "formats");
        for (size_t i = 0; i < ELEMENTSOF(formats); i++)
                if (cJSON_GetObjectItemCaseSensitive(o, formats[i]))
                        cJSON_AddItemToArray(fmts, cJSON_CreateString(formats[i]));
        if (text)
                cJSON_AddStringToObject(summary, "text", text);
        cJSON_AddBoolToObject(summary, "isMainResult", main_result);

        /* The model reads the text form; a result without one is named by its formats. */
        const char *shown = text ? text : md;
        _cleanup_free_ char *joined = shown ? NULL : cJSON_PrintUnformatted(fmts);
        if (shown)
                add_text(x, &x->results, shown, strlen(shown));
        else if (joined) {
                add_text(x, &x->results, "[a result in ", 13);
                add_text(x, &x->results, joined, strlen(joined));
                add_text(x, &x->results, "]", 1);
        }
        add_text(x, &x->results, "\n", 1);
        if (cJSON_GetArraySize(x->result_list) < CODE_MAX_RESULTS)
                cJSON_AddItemToArray(x->result_list, summary);
        else
                cJSON_Delete(summary);

        static const char *const images[][2] = {{"png", "image/png"}, {"jpeg", "image/jpeg"}};
        for (size_t i = 0; i < ELEMENTSOF(images); i++) {
                const char *data = str_field(o, images[i][0]);
                if (!data)
                        continue;
                if (cJSON_GetArraySize(x->images) >= CODE_MAX_IMAGES || !base64_plausible(data)) {
                        x->results_dropped++;
                        break;
                }
                cJSON *item = cJSON_CreateObject();
                cJSON_AddStringToObject(item, "type", "image");
                cJSON_AddStringToObject(item, "data", data);
                cJSON_AddStringToObject(item, "mimeType", images[i][1]);
                cJSON_AddItemToArray(x->images, item);
                break; /* one image per result */
        }
}

static void handle_line(struct mcp_exec *x, const char *line, size_t len)
{
        cJSON *o =
            json_depth(line, len) <= MCP_JSON_MAX_DEPTH ? cJSON_ParseWithLength(line, len) : NULL;
        const char *type = str_field(o, "type");
        if (!type) {
                cJSON_Delete(o);
                return;
        }
        if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
                const char *text = str_field(o, "text");
                if (text)
                        add_text(x, &x->out[type[3] == 'e'], text, strlen(text));
        } else if (strcmp(type, "result") == 0)
                add_result(x, o);
        else if (strcmp(type, "error") == 0 && !x->error) {
                const char *name = str_field(o, "name"), *value = str_field(o, "value");
                const char *tb = str_field(o, "traceback");
                x->error = cJSON_CreateObject();
                cJSON_AddStringToObject(x->error, "name", name ? name : "Error");
                cJSON_AddStringToObject(x->error, "value", value ? value : "");
                cJSON_AddStringToObject(x->error, "traceback", tb ? tb : "");
                if (tb && *tb) {
                        size_t n = strlen(tb);
                        if (n > CODE_MAX_TRACEBACK) { /* the end says what went wrong */
                                (void)buf_add(&x->traceback, "[traceback cut]\n...", 19);
                                tb += n - CODE_MAX_TRACEBACK;
                                n = CODE_MAX_TRACEBACK;
                        }
                        (void)buf_add(&x->traceback, tb, n);
                } else {
                        char head[1200];
                        snprintf(head, sizeof(head), "%.200s: %.900s", name ? name : "Error",
                                 value ? value : "");
                        (void)buf_add(&x->traceback, head, strlen(head));
                }
        }
        cJSON_Delete(o);
}

void mcp_exec_feed(struct mcp_exec *x, const char *data, size_t len)
{
        while (len) {
                const char *nl = memchr(data, '\n', len);
                size_t n = nl ? (size_t)(nl - data) : len;
                if (!x->skipping && x->line.len + n > CODE_MAX_LINE) {
                        x->skipping = true;
                        x->line.len = 0;
                        x->results_dropped++;
                }
                if (!x->skipping && buf_add(&x->line, data, n) < 0)
                        x->skipping = true;
                if (nl) {
                        if (!x->skipping)
                                handle_line(x, buf_str(&x->line), x->line.len);
                        x->line.len = 0;
                        x->skipping = false;
                        n++;
                }
                data += n;
                len -= n;
        }
}

cJSON *mcp_exec_result(struct mcp_exec *x, const char *note, const char *language, int stop,
                       int timeout_ms)
{
        bool timed_out = stop == -ETIMEDOUT;
        struct buf t = {};
        const char *so = buf_str(&x->out[0]), *se = buf_str(&x->out[1]);
        char tail[768] = "";
        if (note)
                (void)buf_add(&t, note, strlen(note));
        (void)buf_add(&t, so, strlen(so));
        if (*se) {
                if (*so && so[strlen(so) - 1] != '\n')
                        (void)buf_add(&t, "\n", 1);
                (void)buf_add(&t, "[stderr]\n", 9);
                (void)buf_add(&t, se, strlen(se));
        }
        if (x->results.len) {
                if (t.len && t.p[t.len - 1] != '\n')
                        (void)buf_add(&t, "\n", 1);
                (void)buf_add(&t, buf_str(&x->results), x->results.len);
        }
        if (x->traceback.len) {
                if (t.len && t.p[t.len - 1] != '\n')
                        (void)buf_add(&t, "\n", 1);
                (void)buf_add(&t, buf_str(&x->traceback), x->traceback.len);
        }
        if (x->dropped)
                snprintf(tail, sizeof(tail),
                         "\n[output cut: %zu more bytes were dropped; write large output to a file "
                         "and read a summary of it]",
                         x->dropped);
        if (x->results_dropped)
                snprintf(tail + strlen(tail), sizeof(tail) - strlen(tail),
                         "\n[%u result(s) not shown: at most %d images per call, each under %d "
                         "bytes of base64; save large results to files instead]",
                         x->results_dropped, CODE_MAX_IMAGES, CODE_MAX_IMAGE_BYTES);
        if (timed_out)
                snprintf(tail + strlen(tail), sizeof(tail) - strlen(tail),
                         "\n[timed out after %d ms: the execution was interrupted; what it defined "
                         "before the interruption is kept. Run long jobs in the background with "
                         "run_shell]",
                         timeout_ms);
        if (stop == -ECANCELED)
                snprintf(tail + strlen(tail), sizeof(tail) - strlen(tail),
                         "\n[cancelled by the client: the execution was interrupted]");
        (void)buf_add(&t, tail, strlen(tail));

        cJSON *r = mcp_text_result(t.len ? t.p : "(no output)", false);
        buf_done(&t);
        cJSON *content = cJSON_GetObjectItemCaseSensitive(r, "content"), *img;
        while ((img = cJSON_DetachItemFromArray(x->images, 0)))
                cJSON_AddItemToArray(content, img);
        cJSON *sc = cJSON_AddObjectToObject(r, "structuredContent");
        cJSON_AddStringToObject(sc, "language", language);
        cJSON_AddStringToObject(sc, "stdout", so);
        cJSON_AddStringToObject(sc, "stderr", se);
        cJSON_AddItemToObject(sc, "results", x->result_list);
        x->result_list = NULL;
        cJSON_AddItemToObject(sc, "error", x->error ? x->error : cJSON_CreateNull());
        x->error = NULL;
        cJSON_AddBoolToObject(sc, "timedOut", timed_out);
        cJSON_AddBoolToObject(sc, "cancelled", stop == -ECANCELED);
        cJSON_AddNumberToObject(sc, "outputBytesDropped", (double)x->dropped);
        cJSON_AddBoolToObject(sc, "sessionPersistent", true);
        cJSON_AddBoolToObject(sc, "sandboxRecreated", note != NULL);
        return r;
}
