/* SPDX-License-Identifier: Apache-2.0 */
#include "buf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_MIN_CAP 256

void buf_done(struct buf *b)
{
        free(b->p);
        *b = (struct buf){0};
}

int buf_reserve(struct buf *b, size_t n)
{
        size_t want;
        char *p;

        if (n > ((size_t)-1) / 2 - b->len)
                return -ENOMEM;
        want = b->len + n + 1;
        if (want <= b->cap)
                return 0;
        want = MAX(want, (size_t)BUF_MIN_CAP);
        want = MAX(want, b->cap * 2);
        p = realloc(b->p, want);
        if (!p)
                return -ENOMEM;
        b->p = p;
        b->cap = want;
        return 0;
}

int buf_add(struct buf *b, const void *data, size_t n)
{
        if (buf_reserve(b, n) < 0)
                return -ENOMEM;
        if (n)
                memcpy(b->p + b->len, data, n);
        b->len += n;
        b->p[b->len] = '\0';
        return 0;
}

int buf_adds(struct buf *b, const char *s)
{
        return buf_add(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0 || buf_reserve(b, (size_t)n) < 0)
                return -ENOMEM;
        va_start(ap, fmt);
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        b->len += (size_t)n;
        return 0;
}

void buf_consume(struct buf *b, size_t n)
{
        if (n >= b->len) {
                b->len = 0;
        } else {
                memmove(b->p, b->p + n, b->len - n);
                b->len -= n;
        }
        if (b->p)
                b->p[b->len] = '\0';
}

const char *buf_str(const struct buf *b)
{
        return b->p ? b->p : "";
}

char *buf_steal(struct buf *b)
{
        char *p = b->p;
        *b = (struct buf){0};
        return p;
}

size_t buf_capped_write(char *data, size_t size, size_t nmemb, void *ud)
{
        struct buf_capped *c = ud;
        size_t n = size * nmemb;
        if (c->b.len + n > c->max || buf_add(&c->b, data, n) < 0)
                return 0;
        return n;
}
