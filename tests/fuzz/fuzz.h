/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the libFuzzer harnesses of tests/fuzz/: a checked assertion that aborts (so
 * libFuzzer and the replay test both see a broken property as a crash), a deterministic
 * way to cut an input into chunks (streaming parsers must give the same answer however the
 * bytes arrive), and an input read as lines of fields.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                                           \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__,        \
                                #cond);                                                            \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

/* Chunk sizes 1..max drawn from a small xorshift generator seeded by the input itself, so a
 * replayed input is cut exactly as it was while fuzzing. */
struct fuzz_chunker {
        uint32_t state;
        size_t max;
};

static inline void fuzz_chunker_init(struct fuzz_chunker *c, const uint8_t *data, size_t size,
                                     size_t max)
{
        uint32_t h = 2166136261u; /* FNV-1a */
        for (size_t i = 0; i < size; i++)
                h = (h ^ data[i]) * 16777619u;
        c->state = h ? h : 1;
        c->max = max ? max : 1;
}

static inline size_t fuzz_chunker_next(struct fuzz_chunker *c, size_t left)
{
        c->state ^= c->state << 13;
        c->state ^= c->state >> 17;
        c->state ^= c->state << 5;
        size_t n = 1 + c->state % c->max;
        return n < left ? n : left;
}

/* The input as n fields, one a line: a NUL-terminated copy (the caller frees it) that f[]
 * points into, the last field taking the rest; a field of the single byte 0x01 is NULL (absent),
 * and so is every field past the input's last line. */
static inline char *fuzz_fields(const uint8_t *data, size_t size, const char **f, int n)
{
        char *copy = malloc(size + 1);
        FUZZ_CHECK(copy);
        memcpy(copy, data, size);
        copy[size] = 0;
        char *p = copy;
        for (int i = 0; i < n; i++)
                f[i] = NULL;
        for (int i = 0; i < n && p; i++) {
                f[i] = p;
                p = strchr(p, '\n');
                if (p && i < n - 1)
                        *p++ = 0;
                else
                        p = NULL;
        }
        for (int i = 0; i < n; i++)
                if (f[i] && strcmp(f[i], "\x01") == 0)
                        f[i] = NULL;
        return copy;
}
