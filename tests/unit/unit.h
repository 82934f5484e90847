/* SPDX-License-Identifier: Apache-2.0 */
/* Minimal unit-test helpers: CHECK() records a failure and continues; main returns the count. */
#pragma once

#include <stdio.h>
#include <string.h>

static int unit_failures;
static int unit_checks;
/* The row a table-driven test is checking now: named after each failure while set. */
static const char *unit_case;

static inline void unit_failed(void)
{
        unit_failures++;
        if (unit_case)
                fprintf(stderr, "  (case: %s)\n", unit_case);
}

#define CHECK(cond)                                                                                \
        do {                                                                                       \
                unit_checks++;                                                                     \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
                        unit_failed();                                                             \
                }                                                                                  \
        } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
        do {                                                                                       \
                long long _a = (long long)(a), _b = (long long)(b);                                \
                unit_checks++;                                                                     \
                if (_a != _b) {                                                                    \
                        fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__,  \
                                #a, _a, _b);                                                       \
                        unit_failed();                                                             \
                }                                                                                  \
        } while (0)

#define CHECK_STREQ(a, b)                                                                          \
        do {                                                                                       \
                const char *_a = (a), *_b = (b);                                                   \
                unit_checks++;                                                                     \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                                           \
                        fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n", __FILE__,        \
                                __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)");             \
                        unit_failed();                                                             \
                }                                                                                  \
        } while (0)

/* A table row's optional expectation: CHECK_STREQ(a, b) when b is given (NULL: not checked). */
#define CHECK_STREQ_IF(a, b)                                                                       \
        do {                                                                                       \
                if (b)                                                                             \
                        CHECK_STREQ(a, b);                                                         \
        } while (0)

static inline int unit_finish(const char *name)
{
        fprintf(stderr, "%s: %d checks, %d failed\n", name, unit_checks, unit_failures);
        return unit_failures ? 1 : 0;
}
