/* SPDX-License-Identifier: Apache-2.0 */
#include "channel/agent-exec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "channel/agent-req.h"
#include "connect.h"
#include "frame.h"
#include "json-util.h"
#include "macros.h"
#include "time-util.h"

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void b64_encode(const char *in, size_t len, char *out)
{
        size_t o = 0;
        for (size_t i = 0; i < len; i += 3) {
                uint32_t v = (uint32_t)(uint8_t)in[i] << 16;
                if (i + 1 < len)
                        v |= (uint32_t)(uint8_t)in[i + 1] << 8;
                if (i + 2 < len)
                        v |= (uint8_t)in[i + 2];
                out[o++] = B64[(v >> 18) & 63];
                out[o++] = B64[(v >> 12) & 63];
                out[o++] = i + 1 < len ? B64[(v >> 6) & 63] : '=';
                out[o++] = i + 2 < len ? B64[v & 63] : '=';
        }
        out[o] = 0;
}

static int b64_value(char c)
{
        const char *p = c ? strchr(B64, c) : NULL;
        if (p)
                return (int)(p - B64);
        return c == '-' ? 62 : c == '_' ? 63 : -1;
}

/* Standard or URL-safe base64, padded or not, decoded in place. -EINVAL when invalid. */
static int b64_decode(char *s, size_t *ret_len)
{
        size_t o = 0, n = 0;
        uint32_t acc = 0;
        for (size_t i = 0; s[i] && s[i] != '='; i++) {
                int v = b64_value(s[i]);
                if (v < 0)
                        return -EINVAL;
                acc = acc << 6 | (uint32_t)v;
                if (++n == 4) {
                        s[o++] = (char)(acc >> 16);
                        s[o++] = (char)(acc >> 8);
                        s[o++] = (char)acc;
                        n = acc = 0;
                }
        }
        if (n == 1)
                return -EINVAL;
        if (n >= 2)
                s[o++] = (char)(n == 2 ? acc >> 4 : acc >> 10);
        if (n == 3)
                s[o++] = (char)(acc >> 2);
        *ret_len = o;
        return 0;
}

static char *start_request(const struct agent_exec *e)
{
        cJSON *j = cJSON_CreateObject(), *p = cJSON_AddObjectToObject(j, "process");
        cJSON *args = cJSON_AddArrayToObject(p, "args");
        cJSON_AddStringToObject(p, "cmd", "/bin/bash");
        cJSON_AddItemToArray(args, cJSON_CreateString("-l"));
        cJSON_AddItemToArray(args, cJSON_CreateString("-c"));
        cJSON_AddItemToArray(args, cJSON_CreateString(e->cmd));
        if (e->cwd)
                cJSON_AddStringToObject(p, "cwd", e->cwd);
        if (e->envs)
                cJSON_AddItemToObject(p, "envs", cJSON_Duplicate(e->envs, 1));
        cJSON_AddFalseToObject(j, "stdin");
        char *text = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        return text;
}

struct exec_state {
        const struct agent_exec *e;
        bool started, ended;
        int exit_code;
        char *errmsg;
        size_t errlen;
};

static void take_output(struct exec_state *st, const cJSON *data, const char *name,
                        enum agent_exec_stream stream)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(data, name);
        size_t len;
        if (!cJSON_IsString(v) || !st->e->output || b64_decode(v->valuestring, &len) < 0)
                return;
        st->e->output(st->e->userdata, stream, v->valuestring, len);
}

/* One envelope of the answer: an event, or the end of the stream (maybe with an error). */
static int on_message(struct exec_state *st, uint8_t flags, const uint8_t *msg, uint32_t len)
{
        if (json_depth((const char *)msg, len) > 16)
                return -EPROTO;
        _cleanup_json_ cJSON *j = cJSON_ParseWithLength((const char *)msg, len);
        if (!cJSON_IsObject(j))
                return -EPROTO;
        if (flags & CONNECT_FLAG_END_STREAM) {
                const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "error");
                const cJSON *m = cJSON_GetObjectItemCaseSensitive(err, "message");
                const cJSON *code = cJSON_GetObjectItemCaseSensitive(err, "code");
                if (err && !st->ended) {
                        /* "<Connect code>: <message>", as Connect's clients say it */
                        snprintf(st->errmsg, st->errlen, "%s%s%s",
                                 cJSON_IsString(code) ? code->valuestring : "",
                                 cJSON_IsString(code) ? ": " : "",
                                 cJSON_IsString(m) ? m->valuestring : "the process failed");
                        return -EIO;
                }
                return st->ended ? 1 : -EPROTO;
        }
        const cJSON *ev = cJSON_GetObjectItemCaseSensitive(j, "event");
        const cJSON *x;
        if (cJSON_GetObjectItemCaseSensitive(ev, "start"))
                st->started = true;
        if ((x = cJSON_GetObjectItemCaseSensitive(ev, "data"))) {
                take_output(st, x, "stdout", AGENT_EXEC_STDOUT);
                take_output(st, x, "stderr", AGENT_EXEC_STDERR);
        }
        if ((x = cJSON_GetObjectItemCaseSensitive(ev, "end"))) {
                const cJSON *code = cJSON_GetObjectItemCaseSensitive(x, "exitCode");
                bool exited = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "exited"));
                st->ended = true;
                st->exit_code = !exited ? -1 : cJSON_IsNumber(code) ? code->valueint : 0;
        }
        return 0;
}

/* A refusal before the stream (Connect's unary error shape): its message in errmsg. */
static int refused(struct agent_req *q, uint16_t status, char *errmsg, size_t errlen)
{
        struct buf b = {};
        int r = agent_req_read_body(q, 64 * 1024, &b);
        _cleanup_json_ cJSON *j =
            r >= 0 && json_depth(buf_str(&b), b.len) <= 16 ? cJSON_Parse(buf_str(&b)) : NULL;
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "message");
        snprintf(errmsg, errlen, "%s",
                 cJSON_IsString(m) ? m->valuestring : "the agent refused to start the process");
        buf_done(&b);
        return status == 404 || status == 400 ? -ENOENT : -EIO;
}

int agent_exec_run(const char *sandbox_dir, const struct agent_exec *e, int *ret_exit_code,
                   char *errmsg, size_t errlen)
{
        _cleanup_free_ char *body = start_request(e);
        char auth[256], b64[200], timeout[24];
        struct sbx_header hs[3];
        size_t nh = 0;
        if (!body)
                return -ENOMEM;
        errmsg[0] = 0;
        hs[nh++] = (struct sbx_header){"Content-Type", "application/connect+json"};
        if (e->user) {
                char up[130];
                if (strlen(e->user) > 128)
                        return -EINVAL;
                snprintf(up, sizeof(up), "%s:", e->user);
                b64_encode(up, strlen(up), b64);
                snprintf(auth, sizeof(auth), "Basic %s", b64);
                hs[nh++] = (struct sbx_header){"Authorization", auth};
        }
        if (e->timeout_ms > 0) {
                snprintf(timeout, sizeof(timeout), "%lld", (long long)e->timeout_ms);
                hs[nh++] = (struct sbx_header){"Connect-Timeout-Ms", timeout};
        }
        struct sbx_req_head h = {.port = SBX_PORT_ENVD,
                                 .method = "POST",
                                 .path = "/process.Process/Start",
                                 .query = "",
                                 .n_headers = nh,
                                 .headers = hs};
        struct agent_req_opts o = {.timeout_ms = 30000, .connect_retry_ms = 10000};
        _cleanup_agent_req_ struct agent_req *q = NULL;
        int r = agent_req_open(sandbox_dir, &h, &o, &q);
        uint8_t env[CONNECT_ENVELOPE_HEADER_SIZE];
        connect_envelope_header(env, 0, (uint32_t)strlen(body));
        if (r >= 0)
                r = agent_req_send(q, env, sizeof(env));
        if (r >= 0)
                r = agent_req_send(q, body, strlen(body));
        if (r >= 0)
                r = agent_req_end(q);
        /* a step may be silent for long: keepalives come every 50 s, the deadline backstops */
        if (r >= 0)
                agent_req_watch_cancel(q, NULL,
                                       e->timeout_ms > 0 ? now_ms() + e->timeout_ms + 10000 : 0);
        if (r >= 0)
                r = agent_req_set_timeouts(q, e->timeout_ms > 0 ? 0 : 120000, 30000);
        struct sbx_resp_head rh = {};
        if (r >= 0)
                r = agent_req_read_head(q, &rh);
        if (r < 0)
                return r;
        uint16_t status = rh.status;
        sbx_resp_head_free(&rh);
        if (status != 200)
                return refused(q, status, errmsg, errlen);

        struct exec_state st = {.e = e, .errmsg = errmsg, .errlen = errlen};
        struct buf pending = {};
        const uint8_t *data;
        uint32_t len;
        while (r >= 0 && (r = agent_req_next(q, &data, &len)) > 0) {
                r = buf_add(&pending, data, len);
                long used = 0;
                while (r >= 0 && pending.len > 0) {
                        uint8_t flags;
                        const uint8_t *msg;
                        uint32_t mlen;
                        used = connect_envelope_parse((const uint8_t *)pending.p, pending.len,
                                                      AGENT_EXEC_MAX_EVENT, &flags, &msg, &mlen);
                        if (used <= 0) {
                                r = used < 0 ? -EPROTO : 0;
                                break;
                        }
                        r = on_message(&st, flags, msg, mlen);
                        buf_consume(&pending, (size_t)used);
                        if (r > 0 || (e->detach && st.started))
                                break;
                }
                if (r > 0 || (r >= 0 && e->detach && st.started))
                        break;
        }
        buf_done(&pending);
        if (r < 0)
                return r;
        if (e->detach && st.started) {
                *ret_exit_code = 0;
                return 0;
        }
        if (!st.ended)
                return -EPROTO;
        *ret_exit_code = st.exit_code;
        return 0;
}
