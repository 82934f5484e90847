/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the libFuzzer harnesses of tests/fuzz/: a checked assertion that aborts (so
 * libFuzzer and the replay test both see a broken property as a crash), and a deterministic
 * way to cut an input into chunks (streaming parsers must give the same answer however the
 * bytes arrive).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
