/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A growable byte buffer, always NUL-terminated once anything was added (so text can be used as
 * a C string while binary data keeps its length). Zero-initialise to start; buf_done() frees.
 */
#pragma once

#include <stddef.h>

#include "macros.h"

struct buf {
        char *p; /* NULL until the first append */
        size_t len, cap;
};

void buf_done(struct buf *b);
/* Make room for n more bytes (plus the NUL); -ENOMEM. */
int buf_reserve(struct buf *b, size_t n);
/* Append; -ENOMEM (the buffer is unchanged then). */
int buf_add(struct buf *b, const void *data, size_t n);
int buf_adds(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) _printf_(2, 3);
/* Drop the first n bytes. */
void buf_consume(struct buf *b, size_t n);
/* The contents as a string: "" while empty. */
const char *buf_str(const struct buf *b);
/* Hand the contents out (the caller frees them; NULL while empty) and reset the buffer. */
char *buf_steal(struct buf *b);

/* A buf that takes at most max bytes in all: what a write callback of fwrite's shape (libcurl's
 * CURLOPT_WRITEFUNCTION) gathers a whole answer into. */
struct buf_capped {
        struct buf b;
        size_t max;
};
/* Append size * nmemb bytes of data to ud, a struct buf_capped: returns how many it took, all
 * of them, or 0 (nothing taken, which ends a transfer) past max or out of memory. */
size_t buf_capped_write(char *data, size_t size, size_t nmemb, void *ud);
