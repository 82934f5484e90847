/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Test helper: one request to the agent's server over a socketpair, served on a thread by
 * agent_server_serve() with the route table set (agent_server_set_routes()), the answer read
 * back whole, and what the handler returned to the server; or started (call_start()) and
 * finished later, or left mid-answer as a client that hangs up does. Header-only, static.
 */
#pragma once

#include <cjson/cJSON.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/server.h"
#include "frame.h"
#include "macros.h"
#include "unit.h"

struct response {
        int status;
        int served; /* agent_server_serve()'s result: the handler's */
        struct sbx_resp_head head;
        uint8_t *body;
        size_t len;
};

static inline void response_done(struct response *r)
{
        sbx_resp_head_free(&r->head);
        free(r->body);
        memset(r, 0, sizeof(*r));
}

struct serve_arg {
        int fd;
        int result;
};

static inline void *serve_thread(void *arg)
{
        struct serve_arg *a = arg;
        a->result = agent_server_serve(a->fd);
        return NULL;
}

static inline const char *response_header(const struct response *r, const char *name)
{
        return sbx_header_get(r->head.headers, r->head.n_headers, name);
}

/* A request under way: the client end of its socketpair, the thread serving the other. Stays
 * where call_start() filled it until call_finish() (the thread holds its arg). */
struct call_conn {
        int fd;
        pthread_t thread;
        struct serve_arg arg;
};

/* Send the request (body in chunks of `chunk` bytes) up to END, to a thread serving it. */
static inline int call_start(uint16_t port, const char *method, const char *path, const char *query,
                             const struct sbx_header *hs, size_t n_hs, const void *body, size_t len,
                             size_t chunk, struct call_conn *c)
{
        struct sbx_req_head h = {.port = port,
                                 .method = method,
                                 .path = path,
                                 .query = query ? query : "",
                                 .n_headers = n_hs,
                                 .headers = (struct sbx_header *)hs};
        uint8_t *buf = NULL;
        size_t blen;
        int sv[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        c->fd = sv[0];
        c->arg = (struct serve_arg){.fd = sv[1]};
        pthread_create(&c->thread, NULL, serve_thread, &c->arg);
        CHECK_EQ_INT(sbx_req_head_encode(&h, &buf, &blen), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_REQ_HEAD, buf, blen), 0);
        free(buf);
        for (size_t off = 0; off < len;) {
                size_t n = MIN(chunk, len - off);
                if (sbx_frame_write(sv[0], SBX_FRAME_DATA, (const uint8_t *)body + off, n) < 0)
                        break; /* answered early (a refusal): the rest is not read */
                off += n;
        }
        (void)sbx_frame_write(sv[0], SBX_FRAME_END, NULL, 0);
        return 0;
}

/* Read the answer of a started call to END into ret, and end the call. */
static inline void call_finish(struct call_conn *c, struct response *ret)
{
        uint8_t *frame = malloc(SBX_FRAME_MAX_PAYLOAD);
        uint8_t type;
        uint32_t flen;

        memset(ret, 0, sizeof(*ret));
        CHECK_EQ_INT(sbx_frame_read(c->fd, &type, frame, &flen), 0);
        CHECK_EQ_INT(type, SBX_FRAME_RESP_HEAD);
        CHECK_EQ_INT(sbx_resp_head_decode(frame, flen, &ret->head), 0);
        ret->status = ret->head.status;
        for (;;) {
                if (sbx_frame_read(c->fd, &type, frame, &flen) < 0 || type == SBX_FRAME_END)
                        break;
                ret->body = realloc(ret->body, ret->len + flen + 1);
                memcpy(ret->body + ret->len, frame, flen);
                ret->len += flen;
                ret->body[ret->len] = 0;
        }
        /* Nothing after END (one answer only): the server closes the connection. */
        CHECK(sbx_frame_read(c->fd, &type, frame, &flen) < 0);
        pthread_join(c->thread, NULL);
        ret->served = c->arg.result;
        close(c->fd);
        free(frame);
}

/* Send the request (body in chunks of `chunk` bytes), read the answer to END. */
static inline int call(uint16_t port, const char *method, const char *path, const char *query,
                       const struct sbx_header *hs, size_t n_hs, const void *body, size_t len,
                       size_t chunk, struct response *ret)
{
        struct call_conn c;
        int r = call_start(port, method, path, query, hs, n_hs, body, len, chunk, &c);
        memset(ret, 0, sizeof(*ret));
        if (r < 0)
                return r;
        call_finish(&c, ret);
        return 0;
}

/* The answer is exactly the native API's error: status, application/json, and a body that is
 * {"error":{"code":code,"message":<non-empty string>}} and nothing else. */
static inline void check_native_error(const struct response *r, int status, const char *code)
{
        cJSON *o = r->body ? cJSON_ParseWithLength((const char *)r->body, r->len) : NULL;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");

        CHECK_EQ_INT(r->status, status);
        CHECK_EQ_INT(r->served, status);
        CHECK_STREQ(response_header(r, "Content-Type"), "application/json");
        CHECK(cJSON_IsObject(o) && cJSON_GetArraySize(o) == 1);
        CHECK(cJSON_IsObject(e) && cJSON_GetArraySize(e) == 2);
        CHECK(cJSON_IsString(c) && strcmp(c->valuestring, code) == 0);
        CHECK(cJSON_IsString(m) && m->valuestring[0]);
        if (!(cJSON_IsString(c) && strcmp(c->valuestring, code) == 0) || r->status != status)
                fprintf(stderr, "  got %d %s\n", r->status, r->body ? (char *)r->body : "");
        cJSON_Delete(o);
}
