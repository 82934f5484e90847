/* SPDX-License-Identifier: Apache-2.0 */
#include "core/server.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "interp/code.h"
#include "core/config.h"
#include "envd/connect-json.h"
#include "envd/files.h"
#include "envd/fs.h"
#include "core/http.h"
#include "native/native.h"
#include "proc/process.h"
#include "connect.h"
#include "fd-util.h"
#include "log.h"
#include "macros.h"

#define THREAD_STACK_SIZE (512u * 1024u)
#define HEAD_TIMEOUT_S    30

static atomic_int active_connections;

struct conn_slot {
        int fd;
        bool slot_held;
};

/* ---- request body ---- */

const char *agent_request_header(const struct agent_request *r, const char *name)
{
        return sbx_header_get(r->head.headers, r->head.n_headers, name);
}

int agent_request_read_body(struct agent_request *r, const uint8_t **ret_buf, size_t *ret_len)
{
        uint32_t len;
        int e;

        if (r->body_done)
                return 0;
        e = sbx_frame_read_body(r->fd, r->frame_buf, &len);
        if (e < 0)
                return e == -EPIPE ? -EPROTO : e;
        if (e == 0) {
                r->body_done = true;
                return 0;
        }
        *ret_buf = r->frame_buf;
        *ret_len = len;
        return 1;
}

int agent_request_read_body_all(struct agent_request *r, size_t max, uint8_t **ret, size_t *ret_len)
{
        _cleanup_free_ uint8_t *buf = malloc(1);
        size_t len = 0;
        const uint8_t *chunk;
        size_t n;
        int e;

        if (!buf)
                return -ENOMEM;
        while ((e = agent_request_read_body(r, &chunk, &n)) > 0) {
                if (n > max - len)
                        return -EMSGSIZE;
                uint8_t *nb = realloc(buf, len + n + 1);
                if (!nb)
                        return -ENOMEM;
                buf = nb;
                memcpy(buf + len, chunk, n);
                len += n;
        }
        if (e < 0)
                return e;
        buf[len] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int agent_request_discard_body(struct agent_request *r, size_t max)
{
        const uint8_t *chunk;
        size_t n, total = 0;
        int e;

        while ((e = agent_request_read_body(r, &chunk, &n)) > 0) {
                total += n;
                if (total > max)
                        return -EMSGSIZE;
        }
        return e;
}

int agent_request_basic_user_unknown(const struct agent_request *r, char **ret_name)
{
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_free_ char *name = NULL;
        int e;

        if (!agent_request_header(r, "Authorization"))
                return 0;
        e = agent_request_user(r, NULL, &u, &name);
        if (e != -ENOENT && e != -EINVAL)
                return 0;
        *ret_name = name ? TAKE_PTR(name) : strdup("");
        return 1;
}

int agent_request_user(const struct agent_request *r, const char *override, struct agent_user *ret,
                       char **ret_name)
{
        _cleanup_free_ char *name = NULL;
        int e;

        if (override && *override) {
                name = strdup(override);
                if (!name)
                        return -ENOMEM;
        } else {
                e = http_basic_auth_user(agent_request_header(r, "Authorization"), &name);
                if (e < 0)
                        return e;
                if (e == 0 || !*name) {
                        free(name);
                        name = NULL;
                        e = agent_config_default_user(&name);
                        if (e < 0)
                                return e;
                }
        }
        e = agent_user_lookup(name, ret);
        *ret_name = TAKE_PTR(name);
        return e;
}

/* ---- responses ---- */

int agent_respond_head(struct agent_request *r, int status, const char *const *headers)
{
        struct sbx_header hs[16];
        struct sbx_resp_head h = {.status = (uint16_t)status, .headers = hs};
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len;
        int e;

        for (size_t i = 0; headers && headers[2 * i]; i++) {
                if (i >= ELEMENTSOF(hs))
                        return -E2BIG;
                hs[i].name = (char *)headers[2 * i];
                hs[i].value = (char *)headers[2 * i + 1];
                h.n_headers++;
        }
        e = sbx_resp_head_encode(&h, &buf, &len);
        if (e < 0)
                return e;
        r->resp_started = true;
        return sbx_frame_write(r->fd, SBX_FRAME_RESP_HEAD, buf, len);
}

int agent_respond_data(struct agent_request *r, const void *buf, size_t len)
{
        const uint8_t *p = buf;
        while (len > 0) {
                size_t n = MIN(len, (size_t)SBX_FRAME_MAX_PAYLOAD);
                int e = sbx_frame_write(r->fd, SBX_FRAME_DATA, p, n);
                if (e < 0)
                        return e;
                p += n;
                len -= n;
        }
        return 0;
}

int agent_respond_end(struct agent_request *r)
{
        return sbx_frame_write(r->fd, SBX_FRAME_END, NULL, 0);
}

int agent_respond(struct agent_request *r, int status, const char *content_type, const void *body,
                  size_t len)
{
        char lenbuf[32];
        const char *headers[] = {"Content-Type", content_type, "Content-Length", lenbuf, NULL};
        int e;

        snprintf(lenbuf, sizeof(lenbuf), "%zu", len);
        e = agent_respond_head(r, status, content_type ? headers : NULL);
        if (e < 0)
                return e;
        e = agent_respond_data(r, body, len);
        if (e < 0)
                return e;
        return agent_respond_end(r);
}

enum error_body_kind { ERROR_BODY_REST, ERROR_BODY_CONNECT, ERROR_BODY_END_STREAM };

/* Format the message and build the JSON error body of the given kind (status is used by REST
 * bodies, code by Connect ones). Returns 0 with *ret_body (caller frees) and *ret_len, or
 * -errno. */
static int error_body_v(enum error_body_kind kind, int status, const char *code, char **ret_body,
                        size_t *ret_len, const char *fmt, va_list ap)
    __attribute__((format(printf, 6, 0)));
static int error_body_v(enum error_body_kind kind, int status, const char *code, char **ret_body,
                        size_t *ret_len, const char *fmt, va_list ap)
{
        _cleanup_free_ char *msg = NULL;

        if (vasprintf(&msg, fmt, ap) < 0)
                return -ENOMEM;
        switch (kind) {
        case ERROR_BODY_REST:
                return cj_rest_error_body(status, msg, ret_body, ret_len);
        case ERROR_BODY_CONNECT:
                return cj_error_body(code, msg, ret_body, ret_len);
        case ERROR_BODY_END_STREAM:
                return cj_end_stream_error(code, msg, ret_body, ret_len);
        }
        return -EINVAL;
}

int agent_respond_rest_error(struct agent_request *r, int status, const char *fmt, ...)
{
        _cleanup_free_ char *body = NULL;
        size_t len;
        va_list ap;
        int e;

        va_start(ap, fmt);
        e = error_body_v(ERROR_BODY_REST, status, NULL, &body, &len, fmt, ap);
        va_end(ap);
        if (e < 0)
                return e;
        return agent_respond(r, status, "application/json; charset=utf-8", body, len);
}

int agent_respond_connect_error(struct agent_request *r, const char *code, const char *fmt, ...)
{
        _cleanup_free_ char *body = NULL;
        size_t len;
        va_list ap;
        int e;

        va_start(ap, fmt);
        e = error_body_v(ERROR_BODY_CONNECT, 0, code, &body, &len, fmt, ap);
        va_end(ap);
        if (e < 0)
                return e;
        return agent_respond(r, connect_code_http_status(code), "application/json", body, len);
}

int agent_respond_envelope(struct agent_request *r, uint8_t flags, const char *json, size_t len)
{
        _cleanup_free_ uint8_t *env = NULL;
        size_t env_len;
        int e = cj_envelope(flags, json, len, &env, &env_len);
        if (e < 0)
                return e;
        return agent_respond_data(r, env, env_len);
}

int agent_respond_stream_error(struct agent_request *r, const char *code, const char *fmt, ...)
{
        static const char *const headers[] = {"Content-Type", "application/connect+json", NULL};
        _cleanup_free_ char *body = NULL;
        size_t len;
        va_list ap;
        int e;

        va_start(ap, fmt);
        e = error_body_v(ERROR_BODY_END_STREAM, 0, code, &body, &len, fmt, ap);
        va_end(ap);
        if (e < 0)
                return e;
        if (!r->resp_started) {
                e = agent_respond_head(r, 200, headers);
                if (e < 0)
                        return e;
        }
        e = agent_respond_envelope(r, CONNECT_FLAG_END_STREAM, body, len);
        if (e < 0)
                return e;
        return agent_respond_end(r);
}

int agent_request_read_envelope(struct agent_request *r, uint8_t **ret_body,
                                const uint8_t **ret_msg, uint32_t *ret_msg_len)
{
        _cleanup_free_ uint8_t *body = NULL;
        const uint8_t *msg;
        uint32_t msg_len;
        size_t len;
        uint8_t flags;
        long n;
        int e;

        e = agent_request_read_body_all(r, CONNECT_MAX_MESSAGE + CONNECT_ENVELOPE_HEADER_SIZE,
                                        &body, &len);
        if (e == -EMSGSIZE)
                return agent_respond_stream_error(r, "resource_exhausted", "request too large");
        if (e < 0)
                return e;
        n = connect_envelope_parse(body, len, CONNECT_MAX_MESSAGE, &flags, &msg, &msg_len);
        if (n <= 0 || (size_t)n != len || flags != 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "request must be one uncompressed envelope");
        *ret_msg = msg;
        *ret_msg_len = msg_len;
        *ret_body = TAKE_PTR(body);
        return 1;
}

/* ---- routing ---- */

static int handle_init(struct agent_request *r)
{
        _cleanup_free_ uint8_t *body = NULL;
        size_t len;
        int e;

        e = agent_request_read_body_all(r, AGENT_MAX_INIT_BODY, &body, &len);
        if (e == -EMSGSIZE)
                return agent_respond_rest_error(r, 413, "init body too large");
        if (e < 0)
                return e;
        e = agent_config_apply_init((const char *)body, len);
        if (e == -EINVAL)
                return agent_respond_rest_error(r, 400, "invalid init body");
        if (e < 0)
                return agent_respond_rest_error(r, 500, "applying init: %s", strerror(-e));
        /* Code-interpreter templates answer once their default kernel is warm (bounded). */
        agent_code_on_init();
        return agent_respond(r, 204, NULL, NULL, 0);
}

static int handle_health(struct agent_request *r)
{
        int e = agent_request_discard_body(r, 64 * 1024);
        if (e < 0)
                return e;
        return agent_respond(r, 204, NULL, NULL, 0);
}

/* GET /envs: the /init environment as a JSON map (envd; the code interpreter reads it). */
static int handle_envs(struct agent_request *r)
{
        _cleanup_strv_free_ char **envs = NULL;
        _cleanup_free_ char *json = NULL;
        cJSON *obj;
        int e;

        e = agent_request_discard_body(r, 64 * 1024);
        if (e < 0)
                return e;
        if (agent_config_envs(&envs) < 0 || !(obj = cJSON_CreateObject()))
                return agent_respond_rest_error(r, 500, "out of memory");
        for (char **p = envs; *p; p++) {
                char *eq = strchr(*p, '=');
                *eq = '\0';
                if (!cJSON_AddStringToObject(obj, *p, eq + 1)) {
                        cJSON_Delete(obj);
                        return agent_respond_rest_error(r, 500, "out of memory");
                }
        }
        json = cJSON_PrintUnformatted(obj);
        cJSON_Delete(obj);
        if (!json)
                return agent_respond_rest_error(r, 500, "out of memory");
        return agent_respond(r, 200, "application/json", json, strlen(json));
}

static bool is_stream_request(const struct agent_request *r)
{
        const char *ct = agent_request_header(r, "Content-Type");
        return ct && strncasecmp(ct, "application/connect+", 20) == 0;
}

static int handle_not_found(struct agent_request *r)
{
        const char *path = r->head.path;
        int e = agent_request_discard_body(r, 16u * 1024u * 1024u);
        if (e < 0 && e != -EMSGSIZE)
                return e;
        if (r->head.port == SBX_PORT_ENVD && (strncmp(path, "/process.Process/", 17) == 0 ||
                                              strncmp(path, "/filesystem.Filesystem/", 23) == 0)) {
                if (is_stream_request(r))
                        return agent_respond_stream_error(r, "unimplemented",
                                                          "%s is not implemented", path);
                return agent_respond_connect_error(r, "unimplemented", "%s is not implemented",
                                                   path);
        }
        return agent_respond_rest_error(r, 404, "no route for %s %s", r->head.method, path);
}

static int route(struct agent_request *r)
{
        const char *m = r->head.method, *p = r->head.path;

        switch (r->head.port) {
        case SBX_PORT_INTERNAL:
                if (streq_ptr(m, "POST") && streq_ptr(p, "/init"))
                        return handle_init(r);
                if (streq_ptr(m, "GET") && streq_ptr(p, "/health"))
                        return handle_health(r);
                if (strncmp(p, "/v1/", 4) == 0)
                        return agent_native_route(r); /* sbxd's native API (native/native.h) */
                break;
        case SBX_PORT_ENVD:
                if (streq_ptr(m, "GET") && streq_ptr(p, "/health"))
                        return handle_health(r);
                if (streq_ptr(m, "POST") && streq_ptr(p, "/process.Process/Start"))
                        return agent_process_handle_start(r);
                if (streq_ptr(m, "POST") && streq_ptr(p, "/process.Process/Connect"))
                        return agent_process_handle_connect(r);
                if (streq_ptr(m, "POST") && strncmp(p, "/process.Process/", 17) == 0 &&
                    !is_stream_request(r)) {
                        int e = agent_process_handle_rpc(r, p + 17);
                        if (e != -ENOENT)
                                return e;
                }
                if (streq_ptr(m, "POST") && strncmp(p, "/filesystem.Filesystem/", 23) == 0) {
                        int e = agent_fs_handle(r, p + 23);
                        if (e != -ENOENT)
                                return e;
                }
                if (streq_ptr(m, "GET") && streq_ptr(p, "/envs"))
                        return handle_envs(r);
                if (streq_ptr(m, "GET") && streq_ptr(p, "/files"))
                        return agent_files_handle_get(r);
                if (streq_ptr(m, "POST") && streq_ptr(p, "/files"))
                        return agent_files_handle_post(r);
                break;
        case SBX_PORT_CODE:
                return agent_code_handle(r);
        default:
                break;
        }
        return handle_not_found(r);
}

static int set_recv_timeout(int fd, int seconds)
{
        struct timeval tv = {.tv_sec = seconds};
        return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ? -errno : 0;
}

void agent_server_serve(int fd)
{
        struct agent_request r = {.fd = fd};
        uint8_t type;
        uint32_t len;
        int e;

        r.frame_buf = malloc(SBX_FRAME_MAX_PAYLOAD);
        if (!r.frame_buf)
                goto out;
        /* sbxd sends the head right after connecting; a silent peer must not hold a slot. */
        (void)set_recv_timeout(fd, HEAD_TIMEOUT_S);
        e = sbx_frame_read(fd, &type, r.frame_buf, &len);
        if (e < 0 || type != SBX_FRAME_REQ_HEAD)
                goto out;
        (void)set_recv_timeout(fd, 0);
        e = sbx_req_head_decode(r.frame_buf, len, &r.head);
        if (e < 0)
                goto out;
        e = route(&r);
        if (e < 0 && e != -EPIPE && e != -ECONNRESET)
                log_debug("%s %s: %s", r.head.method, r.head.path, strerror(-e));
out:
        sbx_req_head_free(&r.head);
        free(r.frame_buf);
        safe_close(fd);
}

static __thread struct conn_slot *current_slot;

void agent_server_release_slot(struct agent_request *r)
{
        if (current_slot && current_slot->slot_held) {
                current_slot->slot_held = false;
                atomic_fetch_sub(&active_connections, 1);
        }
}

static void *conn_thread(void *arg)
{
        struct conn_slot *slot = arg;

        current_slot = slot;
        agent_server_serve(slot->fd);
        agent_server_release_slot(NULL);
        current_slot = NULL;
        free(slot);
        return NULL;
}

static void answer_busy(int fd)
{
        static const char body[] =
            "{\"code\":503,\"message\":\"agent busy: too many connections\"}";
        struct agent_request r = {.fd = fd};
        /* Called from the init loop: never block it on a peer that does not read. */
        (void)fd_set_nonblock(fd, 1);
        (void)agent_respond(&r, 503, "application/json; charset=utf-8", body, sizeof(body) - 1);
        safe_close(fd);
}

void agent_server_spawn(int fd)
{
        pthread_attr_t attr;
        pthread_t t;
        struct conn_slot *slot;

        if (atomic_fetch_add(&active_connections, 1) >= AGENT_MAX_CONNECTIONS) {
                atomic_fetch_sub(&active_connections, 1);
                answer_busy(fd);
                return;
        }
        slot = malloc(sizeof(*slot));
        if (!slot)
                goto fail;
        *slot = (struct conn_slot){.fd = fd, .slot_held = true};
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, THREAD_STACK_SIZE);
        if (pthread_create(&t, &attr, conn_thread, slot) != 0) {
                pthread_attr_destroy(&attr);
                free(slot);
                goto fail;
        }
        pthread_attr_destroy(&attr);
        return;
fail:
        atomic_fetch_sub(&active_connections, 1);
        answer_busy(fd);
}
