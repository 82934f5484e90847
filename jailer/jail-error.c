/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char message[512];

int jail_errorf(int r, const char *fmt, ...)
{
        int e = r < 0 ? -r : r;
        char expanded[256];
        size_t o = 0;
        /* Expand %m ourselves: errno may no longer hold r. */
        for (const char *p = fmt; *p && o + 1 < sizeof(expanded); p++) {
                if (p[0] == '%' && p[1] == 'm') {
                        for (const char *q = strerror(e); *q && o + 2 < sizeof(expanded); q++) {
                                if (*q == '%')
                                        expanded[o++] = '%';
                                expanded[o++] = *q;
                        }
                        p++;
                        continue;
                }
                expanded[o++] = *p;
        }
        expanded[o] = 0;
        va_list ap;
        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(message, sizeof(message), expanded, ap);
#pragma GCC diagnostic pop
        va_end(ap);
        return -e;
}

const char *jail_error_message(void)
{
        return message[0] ? message : NULL;
}
