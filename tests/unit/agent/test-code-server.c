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

#include "agent-call.h"
#include "core/server.h"
#include "frame.h"
#include "macros.h"
#include "routes.h"
#include "test-reaper.h"
#include "unit.h"

/* One call with a JSON body (to the interpreter's port, or /init on port 0): the status, the body
 * NUL-terminated at *ret_body ("" for none; the caller frees it). */
static int code_call(uint16_t port, const char *method, const char *path, const char *body,
                     char **ret_body)
{
        struct sbx_header ct = {"Content-Type", "application/json"};
        size_t len = body ? strlen(body) : 0;
        struct response r;

        CHECK_EQ_INT(call(port, method, path, NULL, &ct, 1, body, len, len, &r), 0);
        *ret_body = r.body ? (char *)TAKE_PTR(r.body) : strdup("");
        int status = r.status;
        response_done(&r);
        return status;
}

/* The id of a context created with this body. */
static char *create_context(const char *json)
{
        char *body, *id = NULL, *p;

        CHECK_EQ_INT(code_call(SBX_PORT_CODE, "POST", "/contexts", json, &body), 200);
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
        CHECK_EQ_INT(code_call(SBX_PORT_CODE, "POST", "/execute", req, &body), 200);
        return body;
}

/* Starts an execution of code_json in ctx and hangs up 300 ms into it, as a client that
 * leaves mid-run does. */
static void execute_and_leave(const char *ctx, const char *code_json)
{
        struct sbx_header ct = {"Content-Type", "application/json"};
        struct call_conn c;
        char req[256];
        int n = snprintf(req, sizeof(req), "{\"code\":%s,\"context_id\":\"%s\"}", code_json, ctx);
        CHECK_EQ_INT(call_start(SBX_PORT_CODE, "POST", "/execute", NULL, &ct, 1, req, (size_t)n,
                                (size_t)n, &c),
                     0);
        usleep(300 * 1000);
        shutdown(c.fd, SHUT_RDWR);
        close(c.fd);
        pthread_join(c.thread, NULL);
}

/* A client that leaves mid-run (loop_json never ends) interrupts the execution, and the
 * context keeps its state: probe_json still answers want. */
static void check_leave_keeps_state(const char *ctx, const char *loop_json, const char *probe_json,
                                    const char *want)
{
        execute_and_leave(ctx, loop_json);
        char *b = execute(ctx, probe_json);
        CHECK(strstr(b, want) != NULL);
        free(b);
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
        check_leave_keeps_state(ctx, "\"import time\\nwhile True: time.sleep(0.01)\"", "\"x\"",
                                "\"text\": \"42\"");

        CHECK_EQ_INT(code_call(SBX_PORT_CODE, "GET", "/contexts", NULL, &b), 200);
        CHECK(strstr(b, ctx) != NULL);
        free(b);
        char path[128];
        snprintf(path, sizeof(path), "/contexts/%s", ctx);
        CHECK_EQ_INT(code_call(SBX_PORT_CODE, "DELETE", path, NULL, &b), 200);
        CHECK_STREQ(b, "null");
        free(b);
        char req2[128];
        snprintf(req2, sizeof(req2), "{\"code\":\"1\",\"context_id\":\"%s\"}", ctx);
        CHECK_EQ_INT(code_call(SBX_PORT_CODE, "POST", "/execute", req2, &b), 404);
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

        check_leave_keeps_state(ctx, "\"repeat {}\"", "\"x\"", "\"text\":\"[1] 42\"");

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
        /* method path body → status, and the body where given */
        static const struct {
                const char *method, *path, *body;
                int status;
                const char *answer;
        } cases[] = {
            {"POST", "/execute", "{\"code\":\"1\",\"context_id\":\"a\",\"language\":\"python\"}",
             400, NULL},
            {"POST", "/execute", "{\"code\":\"1\",\"context_id\":\"nope\"}", 404,
             "Context nope not found"},
            {"POST", "/execute", "{\"code\":1}", 422, NULL},
            {"POST", "/execute", "[", 422, NULL},
            {"POST", "/contexts", "{\"cwd\":\"/no/such/dir\"}", 500, NULL},
            {"GET", "/health", NULL, 200, "\"OK\""},
            {"GET", "/nothing", NULL, 404, NULL},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char *b;
                unit_case = cases[i].body ? cases[i].body : cases[i].path;
                CHECK_EQ_INT(
                    code_call(SBX_PORT_CODE, cases[i].method, cases[i].path, cases[i].body, &b),
                    cases[i].status);
                CHECK_STREQ_IF(b, cases[i].answer);
                free(b);
        }
        unit_case = NULL;
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
        CHECK_EQ_INT(code_call(0, "POST", "/init", "{\"defaultUser\":\"root\"}", &b), 204);
        free(b);
        test_errors();
        test_python();
        test_bash();
        test_r();
        test_reaper_stop(&reaper);
        return unit_finish("test-code-server");
}
