/* SPDX-License-Identifier: Apache-2.0 */
/* API keys: <state>/keys (api/keys-file.h), read at start and again whenever it changes. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "keys-file.h"

#define API_KEY_PREFIX SBX_KEY_PREFIX
#define API_KEY_LEN    SBX_KEY_LEN
#define KEYS_MAX       SBX_KEYS_MAX

/* The keys in force. Readers take the lock shared (keys_check, keys_first); keys_reload
 * replaces them all at once. */
struct keys {
        pthread_rwlock_t lock;
        size_t n;
        char key[KEYS_MAX][API_KEY_LEN + 1];
};

/* Initialise k and load <state_dir>/keys into it, creating the file (0600) with one fresh key
 * when missing. -ENOKEY when it holds no key. */
int keys_load_or_create(const char *state_dir, struct keys *k);
void keys_done(struct keys *k);

/* Read <state_dir>/keys again and put what it holds in force (a file without any key too:
 * then nothing passes, and a warning says so). Returns the number of keys, or -errno with the
 * old keys kept when the file cannot be read. */
int keys_reload(const char *state_dir, struct keys *k);

/* The first key (the one sbxd prints and signs its upload links with, and cluster nodes
 * present to each other) into out; -ENOKEY when there is none. */
int keys_first(struct keys *k, char out[static API_KEY_LEN + 1]);

/* Generate a key into out (API_KEY_LEN + 1 bytes). */
int keys_generate(char out[static API_KEY_LEN + 1]);

/* "e2b_" followed by exactly 40 lowercase hex digits. */
bool key_format_valid(const char *key);

/* Constant-time string compare: time depends on the lengths only, never on the contents. */
bool const_time_streq(const char *a, const char *b);

/* Whether key equals one of the keys in force (constant-time per key; all are compared). */
bool keys_check(struct keys *k, const char *key);
