/* SPDX-License-Identifier: Apache-2.0 */
/* ProcessEvent JSON exactly as envd (protojson) writes it; the error bodies and envelopes of
 * core's answers; Go's words for how a process ended. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "core/request.h"
#include "envd/connect-json.h"
#include "proc/exit-status.h"
#include "unit.h"

#define CHECK_JSON(call, expected)                                                                 \
        do {                                                                                       \
                char *_s = NULL;                                                                   \
                size_t _n = 0;                                                                     \
                CHECK_EQ_INT(call, 0);                                                             \
                CHECK_STREQ(_s, expected);                                                         \
                CHECK_EQ_INT(_n, strlen(expected));                                                \
                free(_s);                                                                          \
        } while (0)

static void test_events(void)
{
        struct agent_exit e;

        CHECK_JSON(cj_event_start(42, &_s, &_n), "{\"event\":{\"start\":{\"pid\":42}}}");
        CHECK_JSON(cj_event_keepalive(&_s, &_n), "{\"event\":{\"keepalive\":{}}}");
        CHECK_JSON(cj_event_data(AGENT_OUT_STDOUT, (const uint8_t *)"hello\n", 6, &_s, &_n),
                   "{\"event\":{\"data\":{\"stdout\":\"aGVsbG8K\"}}}");
        CHECK_JSON(cj_event_data(AGENT_OUT_STDERR, (const uint8_t *)"ab", 2, &_s, &_n),
                   "{\"event\":{\"data\":{\"stderr\":\"YWI=\"}}}");
        CHECK_JSON(cj_event_data(AGENT_OUT_PTY, (const uint8_t *)"\x01\x02\x03", 3, &_s, &_n),
                   "{\"event\":{\"data\":{\"pty\":\"AQID\"}}}");

        agent_exit_from_siginfo(CLD_EXITED, 0, &e);
        CHECK_JSON(cj_event_end(&e, &_s, &_n),
                   "{\"event\":{\"end\":{\"exited\":true,\"status\":\"exit status 0\"}}}");
        agent_exit_from_siginfo(CLD_EXITED, 7, &e);
        CHECK_JSON(cj_event_end(&e, &_s, &_n),
                   "{\"event\":{\"end\":{\"exitCode\":7,\"exited\":true,\"status\":\"exit status "
                   "7\",\"error\":\"exit status 7\"}}}");
        agent_exit_from_siginfo(CLD_KILLED, SIGKILL, &e);
        CHECK_JSON(cj_event_end(&e, &_s, &_n),
                   "{\"event\":{\"end\":{\"exitCode\":-1,\"status\":\"signal: killed\",\"error\":"
                   "\"signal: killed\"}}}");

        CHECK_JSON(agent_end_stream_json(NULL, NULL, &_s, &_n), "{}");
        CHECK_JSON(agent_end_stream_json("deadline_exceeded", "too slow \"x\"", &_s, &_n),
                   "{\"error\":{\"code\":\"deadline_exceeded\",\"message\":\"too slow "
                   "\\\"x\\\"\"}}");
        CHECK_JSON(agent_connect_error_json("unimplemented", "nope", &_s, &_n),
                   "{\"code\":\"unimplemented\",\"message\":\"nope\"}");
        CHECK_JSON(agent_rest_error_json(404, "path '/x' does not exist", &_s, &_n),
                   "{\"code\":404,\"message\":\"path '/x' does not exist\"}");
}

static void test_exit_status(void)
{
        struct agent_exit e;
        char buf[16];

        agent_exit_from_siginfo(CLD_EXITED, 0, &e);
        CHECK_EQ_INT(e.exit_code, 0);
        CHECK(e.exited);
        CHECK(!e.has_error);
        CHECK_STREQ(e.status, "exit status 0");

        agent_exit_from_siginfo(CLD_EXITED, 255, &e);
        CHECK_EQ_INT(e.exit_code, 255);
        CHECK(e.has_error);
        CHECK_STREQ(e.status, "exit status 255");

        agent_exit_from_siginfo(CLD_KILLED, SIGTERM, &e);
        CHECK_EQ_INT(e.exit_code, -1);
        CHECK(!e.exited);
        CHECK(e.has_error);
        CHECK_STREQ(e.status, "signal: terminated");

        agent_exit_from_siginfo(CLD_DUMPED, SIGSEGV, &e);
        CHECK_STREQ(e.status, "signal: segmentation fault (core dumped)");
        agent_exit_from_siginfo(CLD_KILLED, SIGINT, &e);
        CHECK_STREQ(e.status, "signal: interrupt");
        agent_exit_from_siginfo(CLD_KILLED, SIGHUP, &e);
        CHECK_STREQ(e.status, "signal: hangup");
        CHECK_STREQ(agent_signal_name(SIGPIPE, buf), "broken pipe");
        CHECK_STREQ(agent_signal_name(SIGRTMIN + 2, buf), "signal 36");
}

static void test_envelope(void)
{
        uint8_t *b = NULL;
        size_t n = 0;

        CHECK_EQ_INT(agent_connect_envelope(2, "{}", 2, &b, &n), 0);
        CHECK_EQ_INT(n, 7);
        CHECK(memcmp(b, "\x02\x00\x00\x00\x02{}", 7) == 0);
        free(b);
}

static void test_bytes_decode(void)
{
        uint8_t *b = NULL;
        size_t n = 0;

        CHECK_EQ_INT(cj_bytes_decode("YWJj", &b, &n), 0);
        CHECK(n == 3 && memcmp(b, "abc", 3) == 0);
        free(b);
        CHECK_EQ_INT(cj_bytes_decode("YWI=", &b, &n), 0);
        CHECK(n == 2 && memcmp(b, "ab", 2) == 0);
        free(b);
        CHECK_EQ_INT(cj_bytes_decode("YWI", &b, &n), 0); /* unpadded */
        CHECK(n == 2 && memcmp(b, "ab", 2) == 0);
        free(b);
        CHECK_EQ_INT(cj_bytes_decode("-_8", &b, &n), 0); /* URL-safe */
        CHECK(n == 2 && b[0] == 0xfb && b[1] == 0xff);
        free(b);
        CHECK_EQ_INT(cj_bytes_decode("+/8=", &b, &n), 0);
        CHECK(n == 2 && b[0] == 0xfb && b[1] == 0xff);
        free(b);
        CHECK_EQ_INT(cj_bytes_decode("", &b, &n), 0);
        CHECK_EQ_INT(n, 0);
        free(b);
        CHECK_EQ_INT(cj_bytes_decode("Y", &b, &n), -EINVAL);
        CHECK_EQ_INT(cj_bytes_decode("Y!!=", &b, &n), -EINVAL);
}

int main(void)
{
        test_bytes_decode();
        test_events();
        test_exit_status();
        test_envelope();
        return unit_finish("test-agent-connect-json");
}
