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

/* s as a JSON string into out (at most outlen bytes with its NUL; a message that does not fit
 * is cut, never split inside an escape). */
static void json_quote(char *out, size_t outlen, const char *s)
{
        size_t o = 0;
        out[o++] = '"';
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                char esc[8];
                int n = c == '"' || c == '\\' ? snprintf(esc, sizeof(esc), "\\%c", c)
                        : c < 0x20            ? snprintf(esc, sizeof(esc), "\\u%04x", c)
                                              : (esc[0] = (char)c, 1);
                if (o + (size_t)n + 2 > outlen)
                        break;
                memcpy(out + o, esc, (size_t)n);
                o += (size_t)n;
        }
        out[o++] = '"';
        out[o] = 0;
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
                /* one line, one write(): stderr is unbuffered, and a character at a time was a
                 * system call per character (on every create's reply path, among others) */
                struct timespec ts;
                char quoted[sizeof(msg) * 2];
                clock_gettime(CLOCK_REALTIME, &ts);
                json_quote(quoted, sizeof(quoted), msg);
                fprintf(stderr,
                        "{\"ts\":%lld.%03ld,\"level\":\"%s\",\"ident\":\"%s\",\"msg\":%s}\n",
                        (long long)ts.tv_sec, ts.tv_nsec / 1000000, level_names[level], log_ident,
                        quoted);
        } else {
                fprintf(stderr, "%s[%d]: %s: %s\n", log_ident, (int)getpid(), level_names[level],
                        msg);
        }
        return r;
}
