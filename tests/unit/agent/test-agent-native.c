/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The native API's sandbox side (/v1/ on port 0) as sbxd relays it, verbatim: every error is
 * exactly {"error":{"code","message"}} with application/json and the right status, the envd
 * handlers it shares (/v1/files) included, and the agent's 503 when it is full. Also exec,
 * run-code, managed processes and the terminal on the process table, end to end. Needs root.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent-call.h"
#include "buf.h"
#include "core/server.h"
#include "fd-util.h"
#include "frame.h"
#include "native/native.h"
#include "proc/process.h"
#include "routes.h"
#include "test-reaper.h"
#include "unit.h"

static bool utf8_valid(const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        while (*p) {
                int n = *p < 0x80 ? 0 : (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : 3;
                p++;
                for (int i = 0; i < n; i++, p++)
                        if ((*p & 0xc0) != 0x80)
                                return false;
        }
        return true;
}

static void v1(const char *method, const char *path, const char *query, const char *body,
               struct response *r)
{
        struct sbx_header json = {"Content-Type", "application/json"};
        call(0, method, path, query, &json, 1, body, body ? strlen(body) : 0, 4096, r);
}

/* method path query body → status code, every time in the native shape. */
static void expect(const char *method, const char *path, const char *query, const char *body,
                   int status, const char *code)
{
        struct response r;
        v1(method, path, query, body, &r);
        check_native_error(&r, status, code);
        response_done(&r);
}

static void test_errors(void)
{
        char dir[] = "/tmp/sbx-native-test-XXXXXX", q[512];

        CHECK(mkdtemp(dir) != NULL);
        /* routes */
        expect("GET", "/v1/nothing", NULL, NULL, 404, "not_found");
        expect("PATCH", "/v1/files", NULL, NULL, 404, "not_found");
        expect("PUT", "/v1/exec", NULL, NULL, 404, "not_found");
        /* exec */
        expect("POST", "/v1/exec", NULL, "[1,2]", 400, "bad_request");
        expect("POST", "/v1/exec", NULL, "{not json", 400, "bad_request");
        expect("POST", "/v1/exec", NULL, "{}", 400, "bad_request");
        expect("POST", "/v1/exec", NULL, "{\"cmd\":[]}", 400, "bad_request");
        expect("POST", "/v1/exec", NULL, "{\"cmd\":[1]}", 400, "bad_request");
        expect("POST", "/v1/exec", NULL, "{\"cmd\":\"true\",\"timeout_ms\":0}", 400, "bad_request");
        expect("POST", "/v1/exec", NULL, "{\"cmd\":\"true\",\"timeout_ms\":300001}", 400,
               "bad_request");
        expect("POST", "/v1/exec", NULL, "{\"cmd\":\"true\",\"user\":\"bob\"}", 400, "bad_request");
        expect("POST", "/v1/exec", NULL,
               "{\"cmd\":\"head -c 5000 /dev/zero\",\"max_output_bytes\":100}", 422,
               "output_too_large");
        {
                /* Past the body bound: one answer, 413, and nothing else. */
                size_t n = NATIVE_MAX_BODY + 10;
                char *big = malloc(n + 1);
                memset(big, ' ', n);
                big[n] = 0;
                expect("POST", "/v1/exec", NULL, big, 413, "payload_too_large");
                free(big);
        }
        /* run-code */
        expect("POST", "/v1/run-code", NULL, "{\"lang\":\"python\"}", 400, "bad_request");
        expect("POST", "/v1/run-code", NULL, "{\"code\":\"x\",\"lang\":\"ruby\"}", 400,
               "bad_request");
        expect("POST", "/v1/run-code", NULL, "{\"code\":\"x\",\"lang\":1}", 400, "bad_request");
        expect("POST", "/v1/run-code", NULL, "{\"code\":\"x\",\"user\":\"x\"}", 400, "bad_request");
        expect("POST", "/v1/run-code", NULL, "{\"code\":\"x\",\"timeout_ms\":-1}", 400,
               "bad_request");
        {
                size_t n = NATIVE_CODE_MAX + 20;
                char *big = malloc(n + 1);
                memcpy(big, "{\"code\":\"", 9);
                memset(big + 9, 'x', n - 11);
                memcpy(big + n - 2, "\"}", 3);
                expect("POST", "/v1/run-code", NULL, big, 413, "payload_too_large");
                free(big);
        }
        /* files: envd's handlers, answering in the native shape */
        snprintf(q, sizeof(q), "path=%s/none", dir);
        expect("GET", "/v1/files", q, NULL, 404, "not_found");
        snprintf(q, sizeof(q), "path=%s", dir);
        expect("GET", "/v1/files", q, NULL, 400, "bad_request"); /* a directory */
        expect("GET", "/v1/files", "path=/dev/null", NULL, 400, "bad_request");
        expect("GET", "/v1/files", "path=%zz", NULL, 400, "bad_request");
        expect("GET", "/v1/files", "path=/etc/hostname&username=mallory-xyz", NULL, 401,
               "unauthorized");
        expect("PUT", "/v1/files", NULL, "x", 400, "bad_request"); /* no path */
        {
                struct sbx_header raw = {"Content-Type", "application/octet-stream"};
                struct response r;
                snprintf(q, sizeof(q), "path=%s/f", dir);
                call(0, "PUT", "/v1/files", q, &raw, 1, "hello", 5, 2, &r);
                CHECK_EQ_INT(r.status, 200);
                CHECK_EQ_INT(r.served, 200);
                response_done(&r);
                snprintf(q, sizeof(q), "path=%s/f/sub", dir); /* below a file */
                call(0, "PUT", "/v1/files", q, &raw, 1, "hello", 5, 2, &r);
                check_native_error(&r, 400, "bad_request");
                response_done(&r);
        }
        /* fs */
        snprintf(q, sizeof(q), "path=%s/none", dir);
        expect("GET", "/v1/fs/stat", q, NULL, 404, "not_found");
        expect("GET", "/v1/fs/list", q, NULL, 404, "not_found");
        expect("GET", "/v1/fs/list", NULL, NULL, 400, "bad_request");
        expect("GET", "/v1/fs/stat", "path=/tmp&user=bob", NULL, 400, "bad_request");
        expect("GET", "/v1/fs/stat", "path=~bob", NULL, 400, "bad_request");
        snprintf(q, sizeof(q), "{\"path\":\"%s\"}", dir);
        expect("POST", "/v1/fs/mkdir", NULL, q, 409, "conflict");
        expect("POST", "/v1/fs/mkdir", NULL, "{}", 400, "bad_request");
        expect("POST", "/v1/fs/move", NULL, "{\"from\":\"/tmp\"}", 400, "bad_request");
        snprintf(q, sizeof(q), "{\"from\":\"%s/none\",\"to\":\"%s/x\"}", dir, dir);
        expect("POST", "/v1/fs/move", NULL, q, 404, "not_found");
        expect("DELETE", "/v1/fs", "path=/", NULL, 400, "bad_request");
        snprintf(q, sizeof(q), "path=%s", dir);
        expect("DELETE", "/v1/fs", q, NULL, 409, "conflict"); /* not empty */
        expect("GET", "/v1/fs/search", q, NULL, 400, "bad_request");
        snprintf(q, sizeof(q), "path=%s&name=x&max_results=0", dir);
        expect("GET", "/v1/fs/search", q, NULL, 400, "bad_request");
        snprintf(q, sizeof(q), "path=%s/none&name=x", dir);
        expect("GET", "/v1/fs/search", q, NULL, 404, "not_found");
        snprintf(q, sizeof(q), "path=%s/f", dir);
        expect("GET", "/v1/fs/watch", q, NULL, 404, "not_found");
        /* processes */
        expect("GET", "/v1/processes/abc", NULL, NULL, 404, "not_found");
        expect("GET", "/v1/processes/999999", NULL, NULL, 404, "not_found");
        expect("GET", "/v1/processes/999999/logs", NULL, NULL, 404, "not_found");
        expect("POST", "/v1/processes/999999/signal", NULL, "{}", 404, "not_found");
        expect("DELETE", "/v1/processes/999999", NULL, NULL, 404, "not_found");
        expect("PUT", "/v1/processes", NULL, NULL, 404, "not_found");
        expect("POST", "/v1/processes/12/nothing", NULL, NULL, 404, "not_found");
        expect("POST", "/v1/processes", NULL, "{\"cmd\":[]}", 400, "bad_request");
        expect("POST", "/v1/processes", NULL, "{\"cmd\":\"true\",\"cwd\":1}", 400, "bad_request");
        expect("POST", "/v1/processes", NULL, "{\"cmd\":\"true\",\"env\":[]}", 400, "bad_request");
        expect("POST", "/v1/processes", NULL, "{\"cmd\":\"true\",\"cwd\":\"/nonexistent\"}", 400,
               "bad_request");
        expect("POST", "/v1/processes", NULL, "{\"cmd\":\"true\",\"user\":\"x\"}", 400,
               "bad_request");
        /* terminal */
        expect("GET", "/v1/terminal", "user=bob", NULL, 400, "bad_request");
        /* A message is at most NATIVE_MESSAGE_MAX bytes, cut between characters. */
        {
                struct buf qs = {0};
                struct response r;
                buf_adds(&qs, "path=/tmp/x");
                for (int i = 0; i < 700; i++) /* é: two bytes each, 100 to a component */
                        buf_adds(&qs, i % 100 ? "%C3%A9" : "/%C3%A9");
                v1("GET", "/v1/fs/stat", buf_str(&qs), NULL, &r);
                check_native_error(&r, 404, "not_found");
                cJSON *o = cJSON_ParseWithLength((const char *)r.body, r.len);
                const char *m = cJSON_GetStringValue(
                    cJSON_GetObjectItem(cJSON_GetObjectItem(o, "error"), "message"));
                CHECK(m && strlen(m) <= NATIVE_MESSAGE_MAX && strlen(m) >= NATIVE_MESSAGE_MAX - 1);
                CHECK(m && utf8_valid(m));
                cJSON_Delete(o);
                response_done(&r);
                buf_done(&qs);
        }

        /* no shell: the process table's reaper would take system()'s child */
        CHECK_EQ_INT(rm_rf(dir), 0);
}

static cJSON *json_of(const struct response *r)
{
        return r->body ? cJSON_ParseWithLength((const char *)r->body, r->len) : NULL;
}

/* A v1 call without a query that must answer status: its JSON body (NULL when none), for
 * v1_done(). */
static cJSON *v1_json(const char *method, const char *path, const char *body, int status,
                      struct response *r)
{
        v1(method, path, NULL, body, r);
        CHECK_EQ_INT(r->status, status);
        return json_of(r);
}

static void v1_done(cJSON *o, struct response *r)
{
        cJSON_Delete(o);
        response_done(r);
}

static void test_runs(void)
{
        struct response r;
        cJSON *o;

        o = v1_json("POST", "/v1/exec",
                    "{\"cmd\":[\"sh\",\"-c\",\"printf hi; printf er >&2; exit 4\"]}", 200, &r);
        CHECK_EQ_INT(r.served, 200);
        const cJSON *res = cJSON_GetObjectItem(o, "result");
        CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(res, "stdout")), "hi");
        CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(res, "stderr")), "er");
        CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(res, "exit_code")), 4);
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(res, "ok")));
        CHECK(cJSON_IsFalse(cJSON_GetObjectItem(res, "timed_out")));
        v1_done(o, &r);

        o = v1_json("POST", "/v1/exec", "{\"cmd\":\"sleep 5\",\"timeout_ms\":100}", 200, &r);
        res = cJSON_GetObjectItem(o, "result");
        CHECK(cJSON_IsTrue(cJSON_GetObjectItem(res, "timed_out")));
        CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(res, "exit_code")), -1);
        v1_done(o, &r);

        /* run-code: the code on stdin, each interpreter reading it whole. */
        o = v1_json("POST", "/v1/run-code",
                    "{\"code\":\"echo $((6*7)); read x || echo eof\",\"lang\":\"sh\"}", 200, &r);
        CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(o, "stdout")), "42\neof\n");
        v1_done(o, &r);
        o = v1_json("POST", "/v1/run-code",
                    "{\"code\":\"echo $BASH_VERSION | cut -c1\",\"lang\":\"bash\"}", 200, &r);
        CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "exit_code")), 0);
        CHECK(strlen(cJSON_GetStringValue(cJSON_GetObjectItem(o, "stdout"))) == 2);
        v1_done(o, &r);

        /* A managed process: started, listed, its log, exited, forgotten. */
        o = v1_json("POST", "/v1/processes", "{\"cmd\":\"printf managed\"}", 201, &r);
        CHECK_EQ_INT(r.served, 201);
        int pid = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "pid"));
        v1_done(o, &r);
        char path[64];
        snprintf(path, sizeof(path), "/v1/processes/%d/logs", pid);
        call(0, "GET", path, "follow=true", NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 200);
        CHECK_EQ_INT(r.served, 200);
        CHECK_STREQ((char *)r.body, "managed");
        response_done(&r);
        snprintf(path, sizeof(path), "/v1/processes/%d", pid);
        o = v1_json("GET", path, NULL, 200, &r);
        CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(o, "status")), "exited");
        CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "exit_code")), 0);
        v1_done(o, &r);
        snprintf(path, sizeof(path), "/v1/processes/%d/signal", pid);
        expect("POST", path, NULL, "{}", 409, "conflict");
        snprintf(path, sizeof(path), "/v1/processes/%d", pid);
        v1("DELETE", path, NULL, NULL, &r);
        CHECK_EQ_INT(r.status, 200);
        response_done(&r);
        expect("GET", path, NULL, NULL, 404, "not_found");
}

/* The terminal: input frames in, tagged output frames out, the exit code last. */
static void test_terminal(void)
{
        struct sbx_req_head h = {.port = 0,
                                 .method = "GET",
                                 .path = "/v1/terminal",
                                 .query = "cols=90&rows=20&user=root"};
        uint8_t *buf = NULL, *frame = malloc(SBX_FRAME_MAX_PAYLOAD), type;
        struct serve_arg a = {.result = 0};
        struct sbx_resp_head rh = {0};
        char out[8192] = "";
        size_t blen, olen = 0;
        uint32_t flen;
        int sv[2];
        pthread_t t;

        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        a.fd = sv[1];
        pthread_create(&t, NULL, serve_thread, &a);
        CHECK_EQ_INT(sbx_req_head_encode(&h, &buf, &blen), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_REQ_HEAD, buf, blen), 0);
        free(buf);
        CHECK_EQ_INT(sbx_frame_read(sv[0], &type, frame, &flen), 0);
        CHECK_EQ_INT(type, SBX_FRAME_RESP_HEAD);
        CHECK_EQ_INT(sbx_resp_head_decode(frame, flen, &rh), 0);
        CHECK_EQ_INT(rh.status, 200);
        sbx_resp_head_free(&rh);
        static const uint8_t resize[] = {1, 0, 100, 0, 30};
        static const char cmd[] = "\0stty size; exit 7\n";
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_DATA, resize, sizeof(resize)), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_DATA, cmd, sizeof(cmd) - 1), 0);
        for (;;) {
                if (sbx_frame_read(sv[0], &type, frame, &flen) < 0 || type == SBX_FRAME_END)
                        break;
                if (flen >= 1 && olen + flen < sizeof(out)) {
                        out[olen++] = frame[0] ? '|' : '.';
                        memcpy(out + olen, frame + 1, flen - 1);
                        olen += flen - 1;
                        out[olen] = 0;
                }
        }
        CHECK_EQ_INT(type, SBX_FRAME_END);
        CHECK(strstr(out, "30 100") != NULL);
        CHECK(olen >= 2 && strcmp(out + olen - 2, "|7") == 0); /* the exit frame, last */
        pthread_join(t, NULL);
        CHECK_EQ_INT(a.result, 200);
        close(sv[0]);
        free(frame);
}

/* A full agent: 503 in the shape of the API the refused request was for. */
static void test_busy(void)
{
        enum { N = AGENT_MAX_CONNECTIONS };
        static int held[N];
        struct sbx_req_head hold = {.port = 0, .method = "POST", .path = "/v1/exec", .query = ""};
        uint8_t *buf = NULL, *frame = malloc(SBX_FRAME_MAX_PAYLOAD), type;
        size_t blen;
        uint32_t flen;
        int sv[2];

        /* Fill every slot with a request whose body never ends: its handler waits for it. The
         * slot is taken when agent_server_spawn() returns. */
        CHECK_EQ_INT(sbx_req_head_encode(&hold, &buf, &blen), 0);
        for (int i = 0; i < N; i++) {
                CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
                CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_REQ_HEAD, buf, blen), 0);
                agent_server_spawn(sv[1]);
                held[i] = sv[0];
        }
        free(buf);

        static const struct {
                uint16_t port;
                const char *path;
                bool native;
        } cases[] = {{0, "/v1/exec", true}, {SBX_PORT_ENVD, "/files", false}};
        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                struct sbx_req_head h = {
                    .port = cases[c].port, .method = "POST", .path = cases[c].path, .query = ""};
                struct response r = {0};
                CHECK_EQ_INT(sbx_req_head_encode(&h, &buf, &blen), 0);
                CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
                CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_REQ_HEAD, buf, blen), 0);
                free(buf);
                agent_server_spawn(sv[1]); /* answers inline */
                CHECK_EQ_INT(sbx_frame_read(sv[0], &type, frame, &flen), 0);
                CHECK_EQ_INT(sbx_resp_head_decode(frame, flen, &r.head), 0);
                r.status = r.head.status;
                r.served = 503;
                if (sbx_frame_read(sv[0], &type, frame, &flen) == 0 && type == SBX_FRAME_DATA) {
                        r.body = malloc(flen + 1);
                        memcpy(r.body, frame, flen);
                        r.body[flen] = 0;
                        r.len = flen;
                }
                if (cases[c].native)
                        check_native_error(&r, 503, "unavailable");
                else
                        CHECK_STREQ((char *)r.body, "{\"code\":503,\"message\":\"agent busy: too "
                                                    "many connections\"}");
                response_done(&r);
                close(sv[0]);
        }
        for (int i = 0; i < N; i++)
                close(held[i]);
        free(frame);
}

int main(void)
{
        struct test_reaper reaper;

        if (geteuid() != 0) {
                fprintf(stderr, "test-agent-native: skipped (needs root)\n");
                return 77;
        }
        agent_server_set_routes(&agent_routes);
        /* As in the agent (core/init.c): a write to a pipe nobody reads fails with EPIPE. */
        signal(SIGPIPE, SIG_IGN);
        test_reaper_start(&reaper);
        /* This host may have no `user`: act as root by default. */
        struct response r;
        call(0, "POST", "/init", NULL, NULL, 0, "{\"defaultUser\":\"root\"}", 22, 22, &r);
        CHECK_EQ_INT(r.status, 204);
        response_done(&r);
        test_errors();
        test_runs();
        test_terminal();
        test_busy();
        test_reaper_stop(&reaper);
        return unit_finish("test-agent-native");
}
