/* SPDX-License-Identifier: Apache-2.0 */
/* JSON log lines: escaped, and each written whole by one write() (stderr is unbuffered; a line
 * written a character at a time interleaves with other processes' lines and costs a system call
 * per character). stderr is a SOCK_SEQPACKET socket here, so each write() is one message. */
#include <fcntl.h>
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
        return unit_finish("test-log");
}
