/* SPDX-License-Identifier: Apache-2.0 */
/* JSON log lines: escaped, and each written whole by one write() (stderr is unbuffered; a line
 * written a character at a time interleaves with other processes' lines and costs a system call
 * per character). stderr is a SOCK_SEQPACKET socket here, so each write() is one message. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "macros.h"
#include "unit.h"

static int sv[2], saved_stderr;

/* The next message on the socket, or "" when none is pending. */
static const char *next_line(char *buf, size_t len)
{
        ssize_t n = recv(sv[1], buf, len - 1, MSG_DONTWAIT);
        buf[n > 0 ? n : 0] = 0;
        return buf;
}

static int ends_with(const char *s, const char *tail)
{
        size_t a = strlen(s), b = strlen(tail);
        return a >= b && strcmp(s + a - b, tail) == 0;
}

/* A thread's request and sandbox ride along on its JSON lines, until cleared; other threads'
 * lines do not carry them. */
static void *other_thread(void *arg)
{
        log_info("from another thread");
        return arg;
}

static void test_context(void)
{
        static char buf[4096];
        dup2(sv[0], 2);
        log_context_set("1f", "i0abc");
        log_info("about it");
        _cleanup_free_ char *with = strdup(next_line(buf, sizeof(buf)));
        pthread_t t;
        pthread_create(&t, NULL, other_thread, NULL);
        pthread_join(t, NULL);
        _cleanup_free_ char *other = strdup(next_line(buf, sizeof(buf)));
        log_context_set_sandbox(NULL); /* the request stays */
        log_info("request only");
        _cleanup_free_ char *req_only = strdup(next_line(buf, sizeof(buf)));
        log_context_set(NULL, NULL);
        log_info("none");
        const char *none = next_line(buf, sizeof(buf));
        dup2(saved_stderr, 2);
        CHECK(ends_with(with, "\"msg\":\"about it\",\"req\":\"1f\",\"sandbox\":\"i0abc\"}\n"));
        CHECK(ends_with(other, "\"msg\":\"from another thread\"}\n"));
        CHECK(ends_with(req_only, "\"msg\":\"request only\",\"req\":\"1f\"}\n"));
        CHECK(ends_with(none, "\"msg\":\"none\"}\n"));
}

/* LOG_STYLE_SINK: each line, with its level, errno and context, to the sink (the journal's in
 * sbxd). */
static struct log_line sunk;
static char sunk_msg[256], sunk_sandbox[64];
static void sink(const struct log_line *l)
{
        sunk = *l;
        snprintf(sunk_msg, sizeof(sunk_msg), "%s", l->message);
        snprintf(sunk_sandbox, sizeof(sunk_sandbox), "%s", l->sandbox ? l->sandbox : "");
}

static void test_sink(void)
{
        log_set_sink(sink);
        log_context_set("2", "i0def");
        CHECK_EQ_INT(log_warning_errno(-ENOENT, "open %s: %m", "x"), -ENOENT);
        CHECK_EQ_INT(sunk.level, LOG_LEVEL_WARNING);
        CHECK_EQ_INT(sunk.error, ENOENT);
        CHECK_STREQ(sunk_msg, "open x: No such file or directory");
        CHECK_STREQ(sunk_sandbox, "i0def");
        /* a level above the maximum is dropped before the sink */
        log_set_max_level(LOG_LEVEL_WARNING);
        sunk_msg[0] = 0;
        log_info("dropped");
        CHECK_STREQ(sunk_msg, "");
        log_set_max_level(LOG_LEVEL_INFO);
        log_context_set(NULL, NULL);
        log_set_style(LOG_STYLE_JSON);
}

int main(void)
{
        static char buf[65536];
        char long_msg[2001];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return 1;
        /* non-blocking: a line written a character at a time fills the socket and is cut
         * (a check fails) instead of hanging the test */
        fcntl(sv[0], F_SETFL, O_NONBLOCK);
        saved_stderr = dup(2);
        dup2(sv[0], 2);
        log_setup("unit", 1);

        log_info("a \"q\" b\\ c\n d\t%d", 7);
        memset(long_msg, '\x01', sizeof(long_msg) - 1); /* 6 bytes each once escaped */
        long_msg[sizeof(long_msg) - 1] = 0;
        log_warning("%s", long_msg);
        _cleanup_free_ char *one = strdup(next_line(buf, sizeof(buf)));
        _cleanup_free_ char *two = strdup(next_line(buf, sizeof(buf)));
        const char *three = next_line(buf, sizeof(buf));
        dup2(saved_stderr, 2);

        CHECK(strncmp(one, "{\"ts\":", 6) == 0);
        CHECK(strstr(one, "\"level\":\"info\",\"ident\":\"unit\",") != NULL);
        CHECK(ends_with(one, "\"msg\":\"a \\\"q\\\" b\\\\ c\\u000a d\\u00097\"}\n"));
        /* too long to escape whole: cut between escapes, still one valid line */
        CHECK(strstr(two, "\"level\":\"warning\"") != NULL);
        CHECK(ends_with(two, "\\u0001\"}\n"));
        CHECK(strlen(two) < 4200);
        CHECK_STREQ(three, ""); /* nothing more: each line was one write */
        test_context();
        test_sink();
        return unit_finish("test-log");
}
