/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's request handling end to end over a socketpair: routing, /init, Start streams
 * (exact event payloads, exit codes, deadline) and /files round trips. A reaper thread stands
 * in for PID 1. Start and /files need root (credential switches); as non-root those parts
 * are skipped.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent-call.h"
#include "connect.h"
#include "fd-util.h"
#include "core/server.h"
#include "frame.h"
#include "macros.h"
#include "proc/process.h"
#include "routes.h"
#include "test-reaper.h"
#include "unit.h"

static void test_routes(void)
{
        struct response r;

        call(0, "GET", "/health", NULL, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 204);
        CHECK_EQ_INT(r.len, 0);
        response_done(&r);

        static const char init[] = "{\"envVars\":{\"SBX_T\":\"v1\"},\"defaultUser\":\"root\","
                                   "\"defaultWorkdir\":\"/tmp\",\"accessToken\":\"tok\"}";
        call(0, "POST", "/init", NULL, NULL, 0, init, sizeof(init) - 1, 7, &r);
        CHECK_EQ_INT(r.status, 204);
        response_done(&r);
        call(SBX_PORT_ENVD, "GET", "/envs", NULL, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 200);
        CHECK_STREQ((char *)r.body, "{\"SBX_T\":\"v1\"}");
        response_done(&r);
        call(0, "POST", "/init", NULL, NULL, 0, "{", 1, 1, &r);
        CHECK_EQ_INT(r.status, 400);
        response_done(&r);

        call(SBX_PORT_ENVD, "GET", "/health", NULL, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 204);
        response_done(&r);
        call(SBX_PORT_ENVD, "POST", "/init", NULL, NULL, 0, init, sizeof(init) - 1, 99, &r);
        CHECK_EQ_INT(r.status, 404);
        CHECK_STREQ((char *)r.body, "{\"code\":404,\"message\":\"no route for POST /init\"}");
        response_done(&r);
        call(SBX_PORT_CODE, "GET", "/health", NULL, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 404);
        response_done(&r);

        struct sbx_header json = {"Content-Type", "application/json"};
        call(SBX_PORT_ENVD, "POST", "/filesystem.Filesystem/Compose", NULL, &json, 1, "{}", 2, 1,
             &r);
        CHECK_EQ_INT(r.status, 501);
        CHECK(r.body && strstr((char *)r.body, "\"code\":\"unimplemented\""));
        response_done(&r);

        /* Streams answer errors as HTTP 200 + an end-stream frame. */
        struct sbx_header stream = {"Content-Type", "application/connect+json"};
        call(SBX_PORT_ENVD, "POST", "/process.Process/StreamInput", NULL, &stream, 1, NULL, 0, 1,
             &r);
        CHECK_EQ_INT(r.status, 200);
        CHECK(r.len > 5 && r.body[0] == CONNECT_FLAG_END_STREAM);
        CHECK(strstr((char *)r.body + 5, "\"unimplemented\"") != NULL);
        response_done(&r);
        call(SBX_PORT_ENVD, "POST", "/process.Process/Connect", NULL, &stream, 1, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 200);
        CHECK(r.len > 5 && r.body[0] == CONNECT_FLAG_END_STREAM);
        CHECK(strstr((char *)r.body + 5, "\"invalid_argument\"") != NULL);
        response_done(&r);
}

/* Run a Start request; return the envelopes' JSON joined by '\n' (flags as a prefix digit). */
static char *start(const char *json, const char *timeout_ms, const char *user_b64)
{
        struct sbx_header hs[3] = {{"Content-Type", "application/connect+json"}};
        size_t n = 1, out_len = 0;
        size_t jl = strlen(json);
        uint8_t *env = malloc(5 + jl);
        char *out = calloc(1, 1);
        char auth[128];
        struct response r;

        connect_envelope_header(env, 0, (uint32_t)jl);
        memcpy(env + 5, json, jl);
        if (timeout_ms)
                hs[n++] = (struct sbx_header){"Connect-Timeout-Ms", (char *)timeout_ms};
        if (user_b64) {
                snprintf(auth, sizeof(auth), "Basic %s", user_b64);
                hs[n++] = (struct sbx_header){"Authorization", auth};
        }
        call(SBX_PORT_ENVD, "POST", "/process.Process/Start", NULL, hs, n, env, 5 + jl, 3, &r);
        free(env);
        CHECK_EQ_INT(r.status, 200);
        CHECK_STREQ(response_header(&r, "Content-Type"), "application/connect+json");
        for (size_t off = 0; off + 5 <= r.len;) {
                uint8_t flags;
                const uint8_t *msg;
                uint32_t ml;
                long k =
                    connect_envelope_parse(r.body + off, r.len - off, 1 << 20, &flags, &msg, &ml);
                CHECK(k > 0);
                if (k <= 0)
                        break;
                out = realloc(out, out_len + ml + 3);
                out_len += (size_t)sprintf(out + out_len, "%u", flags);
                memcpy(out + out_len, msg, ml);
                out_len += ml;
                out[out_len++] = '\n';
                out[out_len] = 0;
                off += (size_t)k;
        }
        response_done(&r);
        return out;
}

/* Replace the pid digits in the start event with "N". */
static void mask_pid(char *s)
{
        char *p = strstr(s, "\"pid\":");
        if (!p)
                return;
        p += 6;
        char *e = p;
        while (*e >= '0' && *e <= '9')
                e++;
        *p = 'N';
        memmove(p + 1, e, strlen(e) + 1);
}

static void test_start(void)
{
        char *s;

        s = start("{\"process\":{\"cmd\":\"/bin/sh\",\"args\":[\"-c\",\"printf hi; exit 3\"]},"
                  "\"stdin\":false}",
                  NULL, "cm9vdDo=");
        mask_pid(s);
        CHECK_STREQ(s, "0{\"event\":{\"start\":{\"pid\":N}}}\n"
                       "0{\"event\":{\"data\":{\"stdout\":\"aGk=\"}}}\n"
                       "0{\"event\":{\"end\":{\"exitCode\":3,\"exited\":true,\"status\":\"exit "
                       "status 3\",\"error\":\"exit status 3\"}}}\n"
                       "2{}\n");
        free(s);

        /* /init's env and workdir apply; the request's envs override. */
        s = start("{\"process\":{\"cmd\":\"sh\",\"args\":[\"-c\",\"printf "
                  "%s:%s:%s \\\"$SBX_T\\\" \\\"$PWD\\\" \\\"$X\\\"\"],\"envs\":{\"X\":\"y\"}}}",
                  NULL, NULL);
        mask_pid(s);
        CHECK_STREQ(s, "0{\"event\":{\"start\":{\"pid\":N}}}\n"
                       "0{\"event\":{\"data\":{\"stdout\":\"djE6L3RtcDp5\"}}}\n"
                       "0{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}\n"
                       "2{}\n");
        free(s);

        s = start("{\"process\":{\"cmd\":\"sh\",\"args\":[\"-c\",\"kill -9 $$\"]}}", NULL, NULL);
        CHECK(strstr(s, "{\"end\":{\"exitCode\":-1,\"status\":\"signal: killed\",\"error\":"
                        "\"signal: killed\"}}") != NULL);
        free(s);

        s = start("{\"process\":{\"cmd\":\"sleep\",\"args\":[\"5\"]}}", "300", NULL);
        CHECK(strstr(s, "2{\"error\":{\"code\":\"deadline_exceeded\"") != NULL);
        free(s);

        s = start("{\"process\":{\"cmd\":\"/nonexistent/x\"}}", NULL, NULL);
        CHECK(strstr(s, "\"exitCode\":127") != NULL);
        free(s);

        s = start("{\"process\":{\"cmd\":\"true\",\"cwd\":\"/nonexistent\"}}", NULL, NULL);
        CHECK_STREQ(s, "2{\"error\":{\"code\":\"invalid_argument\",\"message\":\"cwd "
                       "'/nonexistent' does not exist\"}}\n");
        free(s);

        s = start("{\"process\":{\"cmd\":\"true\"}}", NULL, "bWFsbG9yeS14eXo6"); /* mallory-xyz: */
        CHECK(strstr(s, "2{\"error\":{\"code\":\"unauthenticated\"") != NULL);
        free(s);

        /* PTY: one terminal for stdin/stdout/stderr, output as "pty" data events. */
        s = start("{\"process\":{\"cmd\":\"sh\",\"args\":[\"-c\",\"test -t 0 && test -t 2 && "
                  "printf x\"]},\"pty\":{\"size\":{\"cols\":100,\"rows\":30}}}",
                  NULL, NULL);
        mask_pid(s);
        CHECK_STREQ(s, "0{\"event\":{\"start\":{\"pid\":N}}}\n"
                       "0{\"event\":{\"data\":{\"pty\":\"eA==\"}}}\n"
                       "0{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}\n"
                       "2{}\n");
        free(s);

        s = start("{\"process\":{}}", NULL, NULL);
        CHECK(strstr(s, "\"invalid_argument\"") != NULL);
        free(s);

        CHECK_EQ_INT(agent_proc_count(), 0);
}

struct bg_start {
        const char *json;
        char *out;
};

static void *bg_start(void *arg)
{
        struct bg_start *b = arg;
        b->out = start(b->json, NULL, NULL);
        return NULL;
}

static int rpc(const char *method, const char *json, struct response *r)
{
        struct sbx_header h = {"Content-Type", "application/json"};
        char path[128];
        snprintf(path, sizeof(path), "/process.Process/%s", method);
        return call(SBX_PORT_ENVD, "POST", path, NULL, &h, 1, json, strlen(json), 5, r);
}

static void test_rpcs(void)
{
        struct bg_start b = {.json =
                                 "{\"process\":{\"cmd\":\"cat\"},\"tag\":\"t1\",\"stdin\":true}"};
        struct response r;
        pthread_t t;
        bool listed = false;

        rpc("List", "{}", &r);
        CHECK_EQ_INT(r.status, 200);
        CHECK_STREQ((char *)r.body, "{}");
        response_done(&r);

        pthread_create(&t, NULL, bg_start, &b);
        for (int i = 0; i < 200 && !listed; i++) {
                rpc("List", "{}", &r);
                listed = r.body && strstr((char *)r.body, "\"config\":{\"cmd\":\"cat\"}") &&
                         strstr((char *)r.body, "\"tag\":\"t1\"");
                response_done(&r);
                if (!listed)
                        usleep(10000);
        }
        CHECK(listed);
        rpc("SendInput", "{\"process\":{\"tag\":\"t1\"},\"input\":{\"stdin\":\"YWJj\"}}", &r);
        CHECK_EQ_INT(r.status, 200);
        CHECK_STREQ((char *)r.body, "{}");
        response_done(&r);
        rpc("SendInput", "{\"process\":{\"tag\":\"t1\"},\"input\":{\"pty\":\"YWJj\"}}", &r);
        CHECK_EQ_INT(r.status, 500);
        response_done(&r);
        rpc("Update", "{\"process\":{\"tag\":\"t1\"},\"pty\":{\"size\":{\"cols\":9,\"rows\":9}}}",
            &r);
        CHECK_EQ_INT(r.status, 500); /* not a pty process */
        response_done(&r);
        rpc("CloseStdin", "{\"process\":{\"tag\":\"t1\"}}", &r);
        CHECK_EQ_INT(r.status, 200);
        response_done(&r);
        pthread_join(t, NULL);
        mask_pid(b.out);
        CHECK_STREQ(b.out, "0{\"event\":{\"start\":{\"pid\":N}}}\n"
                           "0{\"event\":{\"data\":{\"stdout\":\"YWJj\"}}}\n"
                           "0{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}\n"
                           "2{}\n");
        free(b.out);

        /* SendSignal: SIGTERM reaches the process group. */
        b = (struct bg_start){.json = "{\"process\":{\"cmd\":\"sleep\",\"args\":[\"30\"]},"
                                      "\"tag\":\"s1\"}"};
        pthread_create(&t, NULL, bg_start, &b);
        for (int i = 0; i < 200; i++) {
                rpc("SendSignal", "{\"process\":{\"tag\":\"s1\"},\"signal\":\"SIGNAL_SIGTERM\"}",
                    &r);
                int st = r.status;
                response_done(&r);
                if (st == 200)
                        break;
                usleep(10000);
        }
        pthread_join(t, NULL);
        CHECK(strstr(b.out, "\"status\":\"signal: terminated\"") != NULL);
        free(b.out);

        rpc("SendSignal", "{\"process\":{\"pid\":4000000000},\"signal\":\"SIGNAL_SIGKILL\"}", &r);
        CHECK_EQ_INT(r.status, 404);
        CHECK_STREQ(
            (char *)r.body,
            "{\"code\":\"not_found\",\"message\":\"process with pid 4000000000 not found\"}");
        response_done(&r);
        rpc("SendSignal", "{\"process\":{\"pid\":1},\"signal\":\"SIGNAL_SIGHUP\"}", &r);
        CHECK_EQ_INT(r.status, 501);
        response_done(&r);
        rpc("CloseStdin", "{\"process\":{}}", &r);
        CHECK_EQ_INT(r.status, 400);
        response_done(&r);
        {
                struct sbx_header hs[2] = {{"Content-Type", "application/json"},
                                           {"Authorization", "Basic bWFsbG9yeS14eXo6"}};
                call(SBX_PORT_ENVD, "POST", "/process.Process/List", NULL, hs, 2, "{}", 2, 1, &r);
                CHECK_EQ_INT(r.status, 401);
                CHECK(r.body && strstr((char *)r.body, "\"code\":\"unauthenticated\""));
                response_done(&r);
        }
        rpc("SendInput", "not json", &r);
        CHECK_EQ_INT(r.status, 400);
        response_done(&r);
}

/* A multipart body (boundary BND) uploading dir/name, the part's bytes and what ends it in
 * rest; its length. */
static int upload_body(char *body, size_t size, const char *dir, const char *name, const char *rest)
{
        return snprintf(body, size,
                        "--BND\r\nContent-Disposition: form-data; name=\"file\"; "
                        "filename=\"%s/%s\"\r\n\r\n%s",
                        dir, name, rest);
}

static void test_files(void)
{
        char dir[] = "/tmp/sbx-agent-test-XXXXXX", q[256], body[1024];
        struct sbx_header mp = {"Content-Type", "multipart/form-data; boundary=BND"};
        struct sbx_header raw = {"Content-Type", "application/octet-stream"};
        struct response r;
        int n;

        CHECK(mkdtemp(dir) != NULL);
        n = upload_body(body, sizeof(body), dir, "sub/a.txt", "hello\r\n--BND--\r\n");
        call(SBX_PORT_ENVD, "POST", "/files", NULL, &mp, 1, body, (size_t)n, 1, &r);
        CHECK_EQ_INT(r.status, 200);
        snprintf(q, sizeof(q), "[{\"path\":\"%s/sub/a.txt\",\"name\":\"a.txt\",\"type\":\"file\"}]",
                 dir);
        CHECK_STREQ((char *)r.body, q);
        response_done(&r);

        snprintf(q, sizeof(q), "path=%s/sub/a.txt", dir);
        call(SBX_PORT_ENVD, "GET", "/files", q, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 200);
        CHECK_EQ_INT(r.len, 5);
        CHECK(r.body && memcmp(r.body, "hello", 5) == 0);
        CHECK_STREQ(response_header(&r, "Content-Length"), "5");
        CHECK_STREQ(response_header(&r, "Content-Type"), "text/plain; charset=utf-8");
        CHECK_STREQ(response_header(&r, "Content-Disposition"), "inline; filename=\"a.txt\"");
        response_done(&r);

        snprintf(q, sizeof(q), "path=%s/raw.bin", dir);
        call(SBX_PORT_ENVD, "POST", "/files", q, &raw, 1, "\x00\x01\x02", 3, 1, &r);
        CHECK_EQ_INT(r.status, 200);
        response_done(&r);
        call(SBX_PORT_ENVD, "GET", "/files", q, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 200);
        CHECK_EQ_INT(r.len, 3);
        CHECK_STREQ(response_header(&r, "Content-Type"), "application/octet-stream");
        response_done(&r);

        snprintf(q, sizeof(q), "path=%s/sub", dir);
        call(SBX_PORT_ENVD, "GET", "/files", q, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 400);
        CHECK_STREQ(response_header(&r, "Content-Type"), "application/json; charset=utf-8");
        response_done(&r);
        snprintf(q, sizeof(q), "path=%s/none", dir);
        call(SBX_PORT_ENVD, "GET", "/files", q, NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 404);
        response_done(&r);
        call(SBX_PORT_ENVD, "GET", "/files", "path=/dev/null", NULL, 0, NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 400);
        response_done(&r);
        call(SBX_PORT_ENVD, "GET", "/files", "path=/etc/hostname&username=mallory-xyz", NULL, 0,
             NULL, 0, 1, &r);
        CHECK_EQ_INT(r.status, 401);
        response_done(&r);
        call(SBX_PORT_ENVD, "POST", "/files", NULL, &raw, 1, "x", 1, 1, &r);
        CHECK_EQ_INT(r.status, 400);
        response_done(&r);

        /* Truncated multipart: 400 and no file, not even a temporary one. */
        n = upload_body(body, sizeof(body), dir, "t.txt", "partial");
        call(SBX_PORT_ENVD, "POST", "/files", NULL, &mp, 1, body, (size_t)n, 4, &r);
        CHECK_EQ_INT(r.status, 400);
        response_done(&r);
        /* Only what the good uploads made is there (no shell: the process table's reaper
         * would take system()'s child). */
        DIR *d = opendir(dir);
        CHECK(d != NULL);
        int names = 0, others = 0;
        for (struct dirent *de; d && (de = readdir(d));) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (strcmp(de->d_name, "raw.bin") == 0 || strcmp(de->d_name, "sub") == 0)
                        names++;
                else
                        others++;
        }
        if (d)
                closedir(d);
        CHECK_EQ_INT(names, 2);
        CHECK_EQ_INT(others, 0);
        CHECK_EQ_INT(rm_rf(dir), 0);
}

int main(void)
{
        struct test_reaper reaper;

        agent_server_set_routes(&agent_routes);
        test_routes();
        if (geteuid() != 0) {
                fprintf(stderr, "not root: skipping Start and /files\n");
                return unit_finish("test-agent-server");
        }
        test_reaper_start(&reaper);
        test_start();
        test_rpcs();
        test_files();
        test_reaper_stop(&reaper);
        return unit_finish("test-agent-server");
}
