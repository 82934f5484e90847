/* SPDX-License-Identifier: Apache-2.0 */
#include "native/native-loop.h"

#include <errno.h>
#include <nettle/base64.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "envd/connect-json.h"
#include "core/server.h"
#include "connect.h"
#include "frame.h"
#include "macros.h"

#define LOOP_THREAD_STACK (512u * 1024u)

struct native_stream {
        int fd;
        uint8_t *frame; /* SBX_FRAME_MAX_PAYLOAD */
        uint8_t *buf;   /* envelope bytes not consumed yet */
        size_t len, cap;
        bool ended;
};

void native_event_done(struct native_event *ev)
{
        free(ev->data);
        ev->data = NULL;
}

void native_stream_close(struct native_stream *st)
{
        if (!st)
                return;
        safe_close(st->fd);
        free(st->frame);
        free(st->buf);
        free(st);
}

int native_stream_fd(const struct native_stream *st)
{
        return st->fd;
}

static void *serve_thread(void *arg)
{
        agent_server_serve((int)(intptr_t)arg);
        return NULL;
}

static int spawn_server(int fd)
{
        pthread_attr_t attr;
        pthread_t t;
        int e;

        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, LOOP_THREAD_STACK);
        e = pthread_create(&t, &attr, serve_thread, (void *)(intptr_t)fd);
        pthread_attr_destroy(&attr);
        return -e;
}

static cJSON *start_request_json(const struct native_spec *s)
{
        cJSON *root = cJSON_CreateObject(), *proc, *args, *pty, *size;

        if (!root || !(proc = cJSON_AddObjectToObject(root, "process")) ||
            !cJSON_AddStringToObject(proc, "cmd", s->argv[0]) ||
            !(args = cJSON_AddArrayToObject(proc, "args")))
                goto fail;
        for (size_t i = 1; s->argv[i]; i++)
                if (!cJSON_AddItemToArray(args, cJSON_CreateString(s->argv[i])))
                        goto fail;
        if (s->envs && !cJSON_AddItemToObject(proc, "envs", cJSON_Duplicate(s->envs, 1)))
                goto fail;
        if (s->cwd && !cJSON_AddStringToObject(proc, "cwd", s->cwd))
                goto fail;
        if (s->tag && !cJSON_AddStringToObject(root, "tag", s->tag))
                goto fail;
        if (!cJSON_AddBoolToObject(root, "stdin", s->stdin_pipe))
                goto fail;
        if (s->pty) {
                if (!(pty = cJSON_AddObjectToObject(root, "pty")) ||
                    !(size = cJSON_AddObjectToObject(pty, "size")) ||
                    !cJSON_AddNumberToObject(size, "cols", s->cols ? s->cols : 80) ||
                    !cJSON_AddNumberToObject(size, "rows", s->rows ? s->rows : 24))
                        goto fail;
        }
        return root;
fail:
        cJSON_Delete(root);
        return NULL;
}

static int send_start(int fd, const struct native_spec *s)
{
        char timeout[32], auth[256];
        struct sbx_header hs[3] = {{"Content-Type", "application/connect+json"}};
        size_t nh = 1;
        _cleanup_free_ uint8_t *head = NULL, *env = NULL;
        _cleanup_free_ char *json = NULL;
        size_t head_len, env_len;
        cJSON *req;
        int e;

        if (s->timeout_ms > 0) {
                snprintf(timeout, sizeof(timeout), "%lld", (long long)s->timeout_ms);
                hs[nh++] = (struct sbx_header){"Connect-Timeout-Ms", timeout};
        }
        if (s->user) {
                char cred[80];
                int n = snprintf(cred, sizeof(cred), "%s:", s->user);
                if (n <= 0 || (size_t)n >= sizeof(cred))
                        return -EINVAL;
                memcpy(auth, "Basic ", 6);
                base64_encode_raw(auth + 6, (size_t)n, (const uint8_t *)cred);
                auth[6 + BASE64_ENCODE_RAW_LENGTH(n)] = 0;
                hs[nh++] = (struct sbx_header){"Authorization", auth};
        }
        req = start_request_json(s);
        if (!req)
                return -ENOMEM;
        json = cJSON_PrintUnformatted(req);
        cJSON_Delete(req);
        if (!json)
                return -ENOMEM;
        struct sbx_req_head h = {.port = SBX_PORT_ENVD,
                                 .method = "POST",
                                 .path = "/process.Process/Start",
                                 .query = "",
                                 .n_headers = nh,
                                 .headers = hs};
        if ((e = sbx_req_head_encode(&h, &head, &head_len)) < 0 ||
            (e = cj_envelope(0, json, strlen(json), &env, &env_len)) < 0 ||
            (e = sbx_frame_write(fd, SBX_FRAME_REQ_HEAD, head, head_len)) < 0)
                return e;
        for (size_t off = 0; off < env_len;) {
                size_t k = MIN(env_len - off, (size_t)SBX_FRAME_MAX_PAYLOAD);
                if ((e = sbx_frame_write(fd, SBX_FRAME_DATA, env + off, k)) < 0)
                        return e;
                off += k;
        }
        return sbx_frame_write(fd, SBX_FRAME_END, NULL, 0);
}

/* Read frames until one whole envelope is buffered; returns its length or -errno. */
static int fill_envelope(struct native_stream *st, uint8_t *ret_flags, const uint8_t **ret_msg,
                         uint32_t *ret_msg_len)
{
        for (;;) {
                long n = connect_envelope_parse(st->buf, st->len, CONNECT_MAX_MESSAGE, ret_flags,
                                                ret_msg, ret_msg_len);
                if (n < 0)
                        return (int)n;
                if (n > 0)
                        return (int)n;
                uint32_t len;
                int e = sbx_frame_read_body(st->fd, st->frame, &len);
                if (e < 0)
                        return e;
                if (e == 0)
                        return -EPIPE;
                if (st->len + len > CONNECT_MAX_MESSAGE + CONNECT_ENVELOPE_HEADER_SIZE)
                        return -EMSGSIZE;
                if (st->len + len > st->cap) {
                        size_t cap = MAX(st->cap * 2, st->len + len);
                        uint8_t *nb = realloc(st->buf, cap);
                        if (!nb)
                                return -ENOMEM;
                        st->buf = nb;
                        st->cap = cap;
                }
                memcpy(st->buf + st->len, st->frame, len);
                st->len += len;
        }
}

static void copy_str(char *dst, size_t n, const cJSON *j)
{
        snprintf(dst, n, "%s", cJSON_IsString(j) ? j->valuestring : "");
}

static int parse_event(const cJSON *root, bool end_stream, struct native_event *ev)
{
        const cJSON *e, *x;

        if (end_stream) {
                e = cJSON_GetObjectItemCaseSensitive(root, "error");
                ev->kind = NATIVE_EV_ERROR;
                if (!e)
                        return -EPIPE; /* clean end of stream */
                copy_str(ev->code, sizeof(ev->code), cJSON_GetObjectItemCaseSensitive(e, "code"));
                copy_str(ev->message, sizeof(ev->message),
                         cJSON_GetObjectItemCaseSensitive(e, "message"));
                return 0;
        }
        e = cJSON_GetObjectItemCaseSensitive(root, "event");
        if ((x = cJSON_GetObjectItemCaseSensitive(e, "data"))) {
                static const char *const names[] = {"stdout", "stderr", "pty"};
                ev->kind = NATIVE_EV_DATA;
                for (int i = 0; i < 3; i++) {
                        const cJSON *d = cJSON_GetObjectItemCaseSensitive(x, names[i]);
                        if (cJSON_IsString(d)) {
                                ev->stream = i;
                                return cj_bytes_decode(d->valuestring, &ev->data, &ev->len);
                        }
                }
                ev->kind = NATIVE_EV_KEEPALIVE;
                return 0;
        }
        if ((x = cJSON_GetObjectItemCaseSensitive(e, "end"))) {
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(x, "exitCode");
                ev->kind = NATIVE_EV_END;
                ev->exit_code = cJSON_IsNumber(c) ? c->valueint : 0;
                copy_str(ev->status, sizeof(ev->status),
                         cJSON_GetObjectItemCaseSensitive(x, "status"));
                return 0;
        }
        if ((x = cJSON_GetObjectItemCaseSensitive(e, "start"))) {
                const cJSON *p = cJSON_GetObjectItemCaseSensitive(x, "pid");
                ev->kind = NATIVE_EV_KEEPALIVE;
                ev->exit_code = cJSON_IsNumber(p) ? p->valueint : 0; /* the pid, for start */
                return 0;
        }
        ev->kind = NATIVE_EV_KEEPALIVE;
        return 0;
}

int native_stream_next(struct native_stream *st, struct native_event *ev)
{
        const uint8_t *msg;
        uint32_t msg_len;
        uint8_t flags;
        int n, e;

        *ev = (struct native_event){0};
        if (st->ended)
                return -EPIPE;
        n = fill_envelope(st, &flags, &msg, &msg_len);
        if (n < 0)
                return n;
        cJSON *root = cJSON_ParseWithLength((const char *)msg, msg_len);
        memmove(st->buf, st->buf + n, st->len - (size_t)n);
        st->len -= (size_t)n;
        if (!root)
                return -EPROTO;
        e = parse_event(root, flags & CONNECT_FLAG_END_STREAM, ev);
        cJSON_Delete(root);
        if (flags & CONNECT_FLAG_END_STREAM)
                st->ended = true;
        return e;
}

static int read_head(struct native_stream *st, int *ret_pid, char *errbuf, size_t errlen)
{
        struct sbx_resp_head h = {0};
        struct native_event ev;
        uint8_t type;
        uint32_t len;
        int e = sbx_frame_read(st->fd, &type, st->frame, &len);

        if (e < 0)
                return e;
        if (type != SBX_FRAME_RESP_HEAD || sbx_resp_head_decode(st->frame, len, &h) < 0)
                return -EPROTO;
        e = h.status == 200 ? 0 : -EPROTO;
        sbx_resp_head_free(&h);
        if (e < 0)
                return e;
        e = native_stream_next(st, &ev);
        if (e < 0)
                return e;
        native_event_done(&ev);
        if (ev.kind == NATIVE_EV_ERROR) {
                snprintf(errbuf, errlen, "%s: %s", ev.code, ev.message);
                return streq_ptr(ev.code, "unauthenticated") ? -EACCES : -EINVAL;
        }
        if (ev.kind != NATIVE_EV_KEEPALIVE || ev.exit_code <= 0)
                return -EPROTO;
        *ret_pid = ev.exit_code;
        return 0;
}

int native_stream_start(const struct native_spec *s, struct native_stream **ret, int *ret_pid,
                        char *errbuf, size_t errlen)
{
        int sv[2], e;
        struct native_stream *st;

        if (errlen)
                errbuf[0] = 0;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        e = spawn_server(sv[1]);
        if (e < 0) {
                safe_close(sv[0]);
                safe_close(sv[1]);
                return e;
        }
        st = calloc(1, sizeof(*st));
        if (!st || !(st->frame = malloc(SBX_FRAME_MAX_PAYLOAD))) {
                free(st);
                safe_close(sv[0]);
                return -ENOMEM;
        }
        st->fd = sv[0];
        e = send_start(st->fd, s);
        if (e >= 0)
                e = read_head(st, ret_pid, errbuf, errlen);
        if (e < 0) {
                native_stream_close(st);
                return e;
        }
        *ret = st;
        return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), 0 when invalid. */
static size_t utf8_seq(const uint8_t *s, size_t left)
{
        uint8_t c = s[0];
        size_t n;
        uint32_t cp;

        if (c < 0x80)
                return 1;
        if (c >= 0xc2 && c <= 0xdf)
                n = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
                n = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
                n = 4, cp = c & 0x07;
        else
                return 0;
        if (n > left)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
                return 0;
        return n;
}

char *native_utf8_dup(const uint8_t *s, size_t len)
{
        char *out = malloc(len * 3 + 1), *o = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len;) {
                size_t n = utf8_seq(s + i, len - i);
                if (n == 0 || (n == 1 && s[i] == 0)) {
                        memcpy(o, "\xef\xbf\xbd", 3);
                        o += 3;
                        i++;
                        continue;
                }
                memcpy(o, s + i, n);
                o += n;
                i += n;
        }
        *o = 0;
        return out;
}
