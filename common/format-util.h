/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The message of a printf-like function, formatted in one statement. Both macros run inside a
 * function declared `(…, const char *fmt, ...)` with _printf_(): fmt is its last named
 * parameter, and the variadic arguments formatted are its own. Header-only.
 */
#pragma once

#include <stdarg.h>
#include <stdio.h>

/* A new string (the caller frees it), or NULL when out of memory. */
#define FORMAT_VARARGS_DUP(fmt)                                                                    \
        ({                                                                                         \
                va_list ap_;                                                                       \
                char *s_ = NULL;                                                                   \
                va_start(ap_, fmt);                                                                \
                if (vasprintf(&s_, fmt, ap_) < 0)                                                  \
                        s_ = NULL;                                                                 \
                va_end(ap_);                                                                       \
                s_;                                                                                \
        })

/* Into buf (size bytes, the message cut to fit, always NUL-terminated); vsnprintf's result. */
#define FORMAT_VARARGS(buf, size, fmt)                                                             \
        ({                                                                                         \
                va_list ap_;                                                                       \
                va_start(ap_, fmt);                                                                \
                int n_ = vsnprintf(buf, size, fmt, ap_);                                           \
                va_end(ap_);                                                                       \
                n_;                                                                                \
        })
