/* SPDX-License-Identifier: Apache-2.0 */
#include "log-journal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "log.h"

/* journald's socket for the streams of services (systemd.exec(5), StandardOutput=journal) */
#define JOURNAL_STDOUT_SOCKET "/run/systemd/journal/stdout"

bool log_journal_is_stream(int fd)
{
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;
        struct sockaddr_un peer = {};
        socklen_t len = sizeof(peer);
        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(fd, &st) < 0)
                return false;
        if ((unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino)
                return true;
        /* $JOURNAL_STREAM names stderr's stream when both are the journal: stdout is a
         * connection of its own to journald's socket */
        return S_ISSOCK(st.st_mode) && getpeername(fd, (struct sockaddr *)&peer, &len) == 0 &&
               peer.sun_family == AF_UNIX && strcmp(peer.sun_path, JOURNAL_STDOUT_SOCKET) == 0;
}

static void journal_sink(const struct log_line *l)
{
        static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
        char message[2200], priority[16], ident[64], request[64], sandbox[96], error[32];
        struct iovec iov[6];
        size_t n = 0;
#define FIELD(buf, ...)                                                                            \
        do {                                                                                       \
                snprintf(buf, sizeof(buf), __VA_ARGS__);                                           \
                iov[n++] = (struct iovec){.iov_base = buf, .iov_len = strlen(buf)};                \
        } while (0)
        FIELD(message, "MESSAGE=%s", l->message);
        FIELD(priority, "PRIORITY=%d", prio[l->level]);
        FIELD(ident, "SYSLOG_IDENTIFIER=%s", l->ident);
        if (l->request)
                FIELD(request, "REQUEST_ID=%s", l->request);
        if (l->sandbox)
                FIELD(sandbox, "SANDBOX_ID=%s", l->sandbox);
        if (l->error)
                FIELD(error, "ERRNO=%d", l->error);
#undef FIELD
        if (sd_journal_sendv(iov, (int)n) < 0) /* the journal is gone: stderr still is */
                fprintf(stderr, "%s: %s\n", l->ident, l->message);
}

void log_journal_start(void)
{
        log_set_sink(journal_sink);
}
