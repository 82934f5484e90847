/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The code interpreter end to end at the agent, over a socketpair (no sbxd): /contexts CRUD,
 * /execute NDJSON with the real Python, bash and R kernels from the source tree, status codes,
 * an interrupt by closing the connection that keeps the kernel's state. Kernels run as root
 * here (credential switches need it); skipped when not root or without /usr/bin/python3.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/server.h"
#include "frame.h"
#include "macros.h"
#include "routes.h"
#include "test-reaper.h"
#include "unit.h"

static void *serve(void *arg)
{
        agent_server_serve((int)(intptr_t)arg);
        return NULL;
}

struct call {
        int fd;
        pthread_t t;
};

static void call_start(uint16_t port, const char *method, const char *path, const char *body,
                       struct call *c)
{
        struct sbx_header ct = {"Content-Type", "application/json"};
        struct sbx_req_head h = {.port = port,
                                 .method = (char *)method,
                                 .path = (char *)path,
                                 .query = "",
                                 .n_headers = 1,
                                 .headers = &ct};
        uint8_t *buf = NULL;
        size_t blen;
        int sv[2];

        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pthread_create(&c->t, NULL, serve, (void *)(intptr_t)sv[1]);
        CHECK_EQ_INT(sbx_req_head_encode(&h, &buf, &blen), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_REQ_HEAD, buf, blen), 0);
        free(buf);
        if (body && *body)
                CHECK_EQ_INT(
                    sbx_frame_write(sv[0], SBX_FRAME_DATA, (const uint8_t *)body, strlen(body)), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_END, NULL, 0), 0);
        c->fd = sv[0];
}

/* Whole answer: status, body NUL-terminated (caller frees). */
static int call_finish(struct call *c, char **ret_body)
{
        uint8_t *frame = malloc(SBX_FRAME_MAX_PAYLOAD);
        struct sbx_resp_head rh = {0};
        char *body = calloc(1, 1);
        size_t len = 0;
        uint32_t flen;
        uint8_t type;
        int status = -1;

        if (sbx_frame_read(c->fd, &type, frame, &flen) == 0 && type == SBX_FRAME_RESP_HEAD &&
            sbx_resp_head_decode(frame, flen, &rh) == 0)
                status = rh.status;
        while (status > 0 && sbx_frame_read(c->fd, &type, frame, &flen) == 0 &&
               type == SBX_FRAME_DATA) {
                body = realloc(body, len + flen + 1);
                memcpy(body + len, frame, flen);
                len += flen;
                body[len] = 0;
        }
        sbx_resp_head_free(&rh);
        pthread_join(c->t, NULL);
        close(c->fd);
        free(frame);
        *ret_body = body;
        return status;
}

static int call(uint16_t port, const char *method, const char *path, const char *body,
                char **ret_body)
{
        struct call c;
        call_start(port, method, path, body, &c);
        return call_finish(&c, ret_body);
}

/* The id of a context created with this body. */
static char *create_context(const char *json)
{
        char *body, *id = NULL, *p;

        CHECK_EQ_INT(call(SBX_PORT_CODE, "POST", "/contexts", json, &body), 200);
        p = strstr(body, "\"id\":\"");
        if (p)
                id = strndup(p + 6, 36);
        free(body);
        return id;
}

static char *execute(const char *ctx, const char *code_json)
{
        char req[1024], *body;
        snprintf(req, sizeof(req), "{\"code\":%s,\"context_id\":\"%s\"}", code_json, ctx);
        CHECK_EQ_INT(call(SBX_PORT_CODE, "POST", "/execute", req, &body), 200);
        return body;
}

static void test_python(void)
{
        char *ctx = create_context("{\"cwd\":\"/tmp\"}"), *b;

        CHECK(ctx != NULL);
        b = execute(ctx, "\"x = 6 * 7\\nprint('hi')\\nx\"");
        CHECK(strncmp(b, "{\"type\":\"number_of_executions\",\"execution_count\":1}\n", 52) == 0);
        CHECK(strstr(b, "{\"type\":\"stdout\",\"text\":\"hi\\n\",\"timestamp\":\"") != NULL);
        CHECK(strstr(b, "\"text\": \"42\", \"is_main_result\": true}") != NULL);
        CHECK(strstr(b, "\"hi\\n\"") < strstr(b, "\"42\""));
        CHECK(strstr(b, "{\"type\":\"end_of_execution\"}\n") != NULL);
        free(b);
        b = execute(ctx, "\"1/0\"");
        CHECK(strstr(b, "\"execution_count\":2") != NULL);
        CHECK(strstr(b, "\"name\": \"ZeroDivisionError\"") != NULL);
        free(b);
        b = execute(ctx, "\"import os; os.getcwd()\"");
        CHECK(strstr(b, "\"text\": \"/tmp\"") != NULL);
        free(b);

        /* The client leaves mid-run: SIGINT, the state stays. */
        struct call c;
        char req[256];
        snprintf(req, sizeof(req),
                 "{\"code\":\"import time\\nwhile True: time.sleep(0.01)\",\"context_id\":\"%s\"}",
                 ctx);
        call_start(SBX_PORT_CODE, "POST", "/execute", req, &c);
        usleep(300 * 1000);
        shutdown(c.fd, SHUT_RDWR);
        close(c.fd);
        pthread_join(c.t, NULL);
        b = execute(ctx, "\"x\"");
        CHECK(strstr(b, "\"text\": \"42\"") != NULL);
        free(b);

        CHECK_EQ_INT(call(SBX_PORT_CODE, "GET", "/contexts", NULL, &b), 200);
        CHECK(strstr(b, ctx) != NULL);
        free(b);
        char path[128];
        snprintf(path, sizeof(path), "/contexts/%s", ctx);
        CHECK_EQ_INT(call(SBX_PORT_CODE, "DELETE", path, NULL, &b), 200);
        CHECK_STREQ(b, "null");
        free(b);
        char req2[128];
        snprintf(req2, sizeof(req2), "{\"code\":\"1\",\"context_id\":\"%s\"}", ctx);
        CHECK_EQ_INT(call(SBX_PORT_CODE, "POST", "/execute", req2, &b), 404);
        free(b);
        free(ctx);
}

static void test_bash(void)
{
        char *ctx = create_context("{\"language\":\"bash\",\"cwd\":\"/tmp\"}"), *b;

        CHECK(ctx != NULL);
        b = execute(ctx, "\"Y=3; cd /; false\"");
        CHECK(strstr(b, "{\"type\":\"error\",\"name\":\"\",\"value\":\"1\",\"traceback\":\"\"}") !=
              NULL);
        free(b);
        b = execute(ctx, "\"echo $Y $PWD; echo e >&2\"");
        CHECK(strstr(b, "{\"type\":\"stdout\",\"text\":\"3 /\\n\"") != NULL);
        CHECK(strstr(b, "{\"type\":\"stderr\",\"text\":\"e\\n\"") != NULL);
        CHECK(strstr(b, "SBX") == NULL);
        free(b);
        free(ctx);
}

/* R speaks through two FIFOs; an R that exits while a child of its holds them open is seen to
 * die (pidfd), and the next execution gets a fresh session. */
static void test_r(void)
{
        char *ctx, *b;

        if (access("/usr/bin/Rscript", X_OK) != 0) {
                fprintf(stderr, "test-code-server: no /usr/bin/Rscript, R not tested\n");
                return;
        }
        ctx = create_context("{\"language\":\"r\",\"cwd\":\"/tmp\"}");
        CHECK(ctx != NULL);
        b = execute(ctx, "\"x <- 6 * 7\\ncat('hi\\\\n')\\nx\"");
        CHECK(strstr(b, "{\"type\":\"stdout\",\"text\":\"hi\\n\",\"timestamp\":\"") != NULL);
        CHECK(strstr(b, "\"text\":\"[1] 42\",\"is_main_result\":true}") != NULL);
        CHECK(strstr(b, "\"hi\\n\"") < strstr(b, "[1] 42"));
        free(b);
        b = execute(ctx, "\"getwd()\"");
        CHECK(strstr(b, "\"text\":\"[1] \\\"/tmp\\\"\"") != NULL);
        free(b);

        struct call c;
        char req[256];
        snprintf(req, sizeof(req), "{\"code\":\"repeat {}\",\"context_id\":\"%s\"}", ctx);
        call_start(SBX_PORT_CODE, "POST", "/execute", req, &c);
        usleep(300 * 1000);
        shutdown(c.fd, SHUT_RDWR);
        close(c.fd);
        pthread_join(c.t, NULL);
        b = execute(ctx, "\"x\"");
        CHECK(strstr(b, "\"text\":\"[1] 42\"") != NULL);
        free(b);

        b = execute(ctx, "\"system('sleep 2 &'); quit(save = 'no')\"");
        CHECK(strstr(b, "\"name\":\"ContextRestarting\"") != NULL);
        free(b);
        b = execute(ctx, "\"exists('x')\"");
        CHECK(strstr(b, "\"execution_count\":1") != NULL);
        CHECK(strstr(b, "\"text\":\"[1] FALSE\"") != NULL);
        free(b);
        free(ctx);
}

static void test_errors(void)
{
        char *b;

        CHECK_EQ_INT(call(SBX_PORT_CODE, "POST", "/execute",
                          "{\"code\":\"1\",\"context_id\":\"a\",\"language\":\"python\"}", &b),
                     400);
        free(b);
        CHECK_EQ_INT(
            call(SBX_PORT_CODE, "POST", "/execute", "{\"code\":\"1\",\"context_id\":\"nope\"}", &b),
            404);
        CHECK_STREQ(b, "Context nope not found");
        free(b);
        CHECK_EQ_INT(call(SBX_PORT_CODE, "POST", "/execute", "{\"code\":1}", &b), 422);
        free(b);
        CHECK_EQ_INT(call(SBX_PORT_CODE, "POST", "/execute", "[", &b), 422);
        free(b);
        CHECK_EQ_INT(call(SBX_PORT_CODE, "POST", "/contexts", "{\"cwd\":\"/no/such/dir\"}", &b),
                     500);
        free(b);
        CHECK_EQ_INT(call(SBX_PORT_CODE, "GET", "/health", NULL, &b), 200);
        CHECK_STREQ(b, "\"OK\"");
        free(b);
        CHECK_EQ_INT(call(SBX_PORT_CODE, "GET", "/nothing", NULL, &b), 404);
        free(b);
}

int main(void)
{
        struct test_reaper reaper;
        char *b;

        if (geteuid() != 0 || access("/usr/bin/python3", X_OK) != 0) {
                fprintf(stderr, "test-code-server: skipped (needs root and /usr/bin/python3)\n");
                return 77;
        }
        setenv("SBX_CODE_KERNELS_DIR", KERNELS_DIR, 1);
        agent_server_set_routes(&agent_routes);
        test_reaper_start(&reaper);
        CHECK_EQ_INT(call(0, "POST", "/init", "{\"defaultUser\":\"root\"}", &b), 204);
        free(b);
        test_errors();
        test_python();
        test_bash();
        test_r();
        test_reaper_stop(&reaper);
        return unit_finish("test-code-server");
}
