/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static const char *log_ident = "sbx";
static enum log_style log_style;
static enum log_level log_max = LOG_LEVEL_INFO; /* __atomic: a reload sets it */
static bool log_debug_env;                      /* SBX_LOG_LEVEL=debug */
static void (*log_sink)(const struct log_line *line);

/* Small on purpose: static TLS lands on every thread's stack (docs/conventions.md). */
static __thread char ctx_request[LOG_CONTEXT_REQUEST_MAX];
static __thread char ctx_sandbox[LOG_CONTEXT_SANDBOX_MAX];

static const char *const level_names[] = {"error", "warning", "info", "debug"};

void log_setup(const char *ident, int json)
{
        log_ident = ident;
        log_style = json ? LOG_STYLE_JSON : LOG_STYLE_TEXT;
        const char *e = getenv("SBX_LOG_LEVEL");
        log_debug_env = e && strcmp(e, "debug") == 0;
        log_set_max_level(LOG_LEVEL_INFO);
}

void log_set_style(enum log_style style)
{
        if (style != LOG_STYLE_SINK || log_sink)
                log_style = style;
}

void log_set_max_level(enum log_level max)
{
        __atomic_store_n(&log_max, log_debug_env ? LOG_LEVEL_DEBUG : max, __ATOMIC_RELAXED);
}

void log_set_sink(void (*sink)(const struct log_line *line))
{
        log_sink = sink;
        log_style = LOG_STYLE_SINK;
}

void log_context_set(const char *request, const char *sandbox)
{
        snprintf(ctx_request, sizeof(ctx_request), "%s", request ? request : "");
        log_context_set_sandbox(sandbox);
}

void log_context_set_sandbox(const char *sandbox)
{
        snprintf(ctx_sandbox, sizeof(ctx_sandbox), "%s", sandbox ? sandbox : "");
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

/* The context as JSON members (",\"req\":...,\"sandbox\":..."), "" when unset. */
static void context_json(char *out, size_t len)
{
        char q[LOG_CONTEXT_SANDBOX_MAX * 6 + 3];
        size_t o = 0;
        out[0] = 0;
        if (ctx_request[0]) {
                json_quote(q, sizeof(q), ctx_request);
                o += (size_t)snprintf(out + o, len - o, ",\"req\":%s", q);
        }
        if (ctx_sandbox[0] && o < len) {
                json_quote(q, sizeof(q), ctx_sandbox);
                snprintf(out + o, len - o, ",\"sandbox\":%s", q);
        }
}

int log_internal(enum log_level level, int error, const char *fmt, ...)
{
        int r = error > 0 ? -error : error;
        if (level > __atomic_load_n(&log_max, __ATOMIC_RELAXED))
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

        if (log_style == LOG_STYLE_SINK) {
                struct log_line line = {.level = level,
                                        .error = r < 0 ? -r : 0,
                                        .ident = log_ident,
                                        .message = msg,
                                        .request = ctx_request[0] ? ctx_request : NULL,
                                        .sandbox = ctx_sandbox[0] ? ctx_sandbox : NULL};
                log_sink(&line);
        } else if (log_style == LOG_STYLE_JSON) {
                /* one line, one write(): stderr is unbuffered, and a character at a time was a
                 * system call per character (on every create's reply path, among others) */
                struct timespec ts;
                char quoted[sizeof(msg) * 2],
                    fields[(LOG_CONTEXT_REQUEST_MAX + LOG_CONTEXT_SANDBOX_MAX) * 6 + 32];
                clock_gettime(CLOCK_REALTIME, &ts);
                json_quote(quoted, sizeof(quoted), msg);
                context_json(fields, sizeof(fields));
                fprintf(stderr,
                        "{\"ts\":%lld.%03ld,\"level\":\"%s\",\"ident\":\"%s\",\"msg\":%s%s}\n",
                        (long long)ts.tv_sec, ts.tv_nsec / 1000000, level_names[level], log_ident,
                        quoted, fields);
        } else {
                fprintf(stderr, "%s[%d]: %s: %s\n", log_ident, (int)getpid(), level_names[level],
                        msg);
        }
        return r;
}
