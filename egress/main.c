/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbx-egress: the sandboxes' DNS resolver, the TLS proxy of network.rules and the build proxy,
 * in a process of their own (egress/README.md). sbxd starts it as root:
 *     sbx-egress --control-fd N --uid U --gid G
 * It gives up its privileges (proc/privsep.h) before anything else, then serves what sbxd tells
 * it on the control channel (api/egress-ctl.md) until sbxd closes it.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "proc/egress-run.h"
#include "proc/privsep.h"

static int number(const char *s, long min, long max, long *ret)
{
        char *end;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

int main(int argc, char **argv)
{
        static const struct option opts[] = {{"control-fd", required_argument, NULL, 'c'},
                                             {"uid", required_argument, NULL, 'u'},
                                             {"gid", required_argument, NULL, 'g'},
                                             {}};
        long fd = -1, uid = -1, gid = -1;
        int o;
        log_setup("sbx-egress", 1);
        while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                long *v = o == 'c' ? &fd : o == 'u' ? &uid : o == 'g' ? &gid : NULL;
                if (!v || number(optarg, o == 'c' ? 3 : 1, o == 'c' ? 1023 : 0xfffffffeL, v) < 0)
                        goto usage;
        }
        int type = 0;
        socklen_t tl = sizeof(type);
        if (fd < 0 || uid < 0 || gid < 0 || optind != argc ||
            getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 || type != SOCK_SEQPACKET)
                goto usage;
        /* sbxd starts it with every signal at its default: a peer that hangs up must make a
         * write (OpenSSL's too, which uses write()) fail with EPIPE, not end the process */
        if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
                return 1;
        int r = egress_privsep_limits();
        if (r >= 0)
                r = egress_privsep_drop((uid_t)uid, (gid_t)gid);
        if (r >= 0 && OPENSSL_init_ssl(0, NULL) != 1)
                r = -EIO;
        if (r >= 0)
                r = egress_privsep_seccomp();
        if (r < 0) {
                log_error_errno(r, "confining sbx-egress: %m");
                return 1;
        }
        return egress_run((int)fd) < 0 ? 1 : 0;
usage:
        fprintf(stderr, "usage: sbx-egress --control-fd N --uid UID --gid GID (started by sbxd, "
                        "the control fd a SOCK_SEQPACKET socket)\n");
        return 2;
}
