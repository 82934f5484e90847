/* SPDX-License-Identifier: Apache-2.0 */
#include "log-journal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <syslog.h>
#include <systemd/sd-journal.h>

#include "log.h"

bool log_journal_is_stderr(void)
{
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;
        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) < 0)
                return false;
        return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
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
