/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *log_ident = "sbx";
static int log_json;
static enum log_level log_max = LOG_LEVEL_INFO;

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void log_setup(const char *ident, int json)
{
        log_ident = ident;
        log_json = json;
        const char *e = getenv("SBX_LOG_LEVEL");
        if (e && strcmp(e, "debug") == 0)
                log_max = LOG_LEVEL_DEBUG;
}

static void json_quote(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
        fputc('"', f);
}

int log_internal(enum log_level level, int error, const char *fmt, ...)
{
        int r = error > 0 ? -error : error;
        if (level > log_max)
                return r;

        /* Expand %m ourselves so the *_errno variants print the passed error, not errno. */
        char fmtbuf[1024];
        const char *errstr = strerror(r < 0 ? -r : errno);
        size_t o = 0;
        for (const char *p = fmt; *p && o + 1 < sizeof(fmtbuf); p++) {
                if (p[0] == '%' && p[1] == 'm') {
                        for (const char *q = errstr; *q && o + 2 < sizeof(fmtbuf); q++) {
                                if (*q == '%')
                                        fmtbuf[o++] = '%';
                                fmtbuf[o++] = *q;
                        }
                        p++;
                        continue;
                }
                fmtbuf[o++] = *p;
        }
        fmtbuf[o] = 0;

        char msg[2048];
        va_list ap;
        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(msg, sizeof(msg), fmtbuf, ap);
#pragma GCC diagnostic pop
        va_end(ap);

        if (log_json) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                flockfile(stderr);
                fprintf(stderr, "{\"ts\":%lld.%03ld,\"level\":\"%s\",\"ident\":\"%s\",\"msg\":",
                        (long long)ts.tv_sec, ts.tv_nsec / 1000000, level_names[level], log_ident);
                json_quote(stderr, msg);
                fputs("}\n", stderr);
                funlockfile(stderr);
        } else {
                fprintf(stderr, "%s[%d]: %s: %s\n", log_ident, (int)getpid(), level_names[level],
                        msg);
        }
        return r;
}
