/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-jailer --spec-fd N --status-fd M [--attach-egress --pidfd P]: see jailer/README.md. */
#include "jail-attach.h"
#include "jail-run.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

static int parse_fd(const char *s)
{
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || *end || end == s || v < 0 || v > INT_MAX || fcntl((int)v, F_GETFD) < 0)
                return -EBADF;
        return (int)v;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {
            {"spec-fd", required_argument, NULL, 's'},
            {"status-fd", required_argument, NULL, 'S'},
            {"attach-egress", no_argument, NULL, 'a'},
            {"pidfd", required_argument, NULL, 'p'},
            {},
        };
        int spec_fd = -EBADF, status_fd = -EBADF, pidfd = -EBADF, attach = 0, c;
        log_setup("sbx-jailer", 0);
        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                if (c == 's')
                        spec_fd = parse_fd(optarg);
                else if (c == 'S')
                        status_fd = parse_fd(optarg);
                else if (c == 'a')
                        attach = 1;
                else if (c == 'p')
                        pidfd = parse_fd(optarg);
                else
                        return 2;
        }
        if (spec_fd < 0 || status_fd < 0 || optind != argc || attach != (pidfd >= 0)) {
                log_error("usage: sbx-jailer --spec-fd N --status-fd M [--attach-egress --pidfd "
                          "P] (open fds)");
                return 2;
        }
        if (geteuid() != 0) {
                log_error("must run as root");
                return 2;
        }
        /* Our own fds must not reach the child by accident: the child closes everything but
         * the agent socket anyway, this is belt and braces for the parent's helpers. */
        (void)fcntl(spec_fd, F_SETFD, FD_CLOEXEC);
        (void)fcntl(status_fd, F_SETFD, FD_CLOEXEC);
        if (attach) {
                (void)fcntl(pidfd, F_SETFD, FD_CLOEXEC);
                return jail_attach_run(spec_fd, status_fd, pidfd);
        }
        return jail_run(spec_fd, status_fd);
}
