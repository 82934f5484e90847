/* SPDX-License-Identifier: Apache-2.0 */
/* API keys: <state>/keys, one "e2b_" + 40 hex key per line, mode 0600. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define API_KEY_PREFIX "e2b_"
#define API_KEY_LEN    44 /* prefix + 40 hex */
#define KEYS_MAX       64

struct keys {
        size_t n;
        char key[KEYS_MAX][API_KEY_LEN + 1];
};

/* Load <state_dir>/keys (at most KEYS_MAX), creating it (0600) with one fresh key when
 * missing. Lines that are not a well-formed key are skipped; -ENOKEY when none is left. */
int keys_load_or_create(const char *state_dir, struct keys *ret);

/* Generate a key into out (API_KEY_LEN + 1 bytes). */
int keys_generate(char out[static API_KEY_LEN + 1]);

/* "e2b_" followed by exactly 40 lowercase hex digits. */
bool key_format_valid(const char *key);

/* Constant-time string compare: time depends on the lengths only, never on the contents. */
bool const_time_streq(const char *a, const char *b);

/* Whether key equals one of the loaded keys (constant-time per key; all keys are compared). */
bool keys_check(const struct keys *k, const char *key);
