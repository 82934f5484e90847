/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The API keys file, <state>/keys: what sbxd reads (and creates with one key on its first
 * start) and what `sbx key create|ls|revoke` writes.
 *
 *   e2b_<40 lowercase hex>                       a key
 *   e2b_<40 lowercase hex> # name=ci created=... a key and its label (anything after "#")
 *   # ...                                        a comment; blank lines are skipped
 *
 * Mode 0600, owned by root; replaced atomically (a temporary file renamed over it) by the
 * writers, under an flock of <state>/keys.lock, so a reader never sees half a file. A line that
 * is none of the above is kept by the writers and skipped (and counted) by the readers.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define SBX_KEY_PREFIX     "e2b_"
#define SBX_KEY_LEN        44 /* the prefix and 40 hex digits */
#define SBX_KEYS_MAX       64 /* keys read from one file; more are skipped */
#define SBX_KEYS_FILE_MAX  (64 * 1024)
#define SBX_KEY_LABEL_MAX  200
#define SBX_KEYS_FILE      "keys"
#define SBX_KEYS_LOCK_FILE "keys.lock"

struct sbx_key_line {
        char key[SBX_KEY_LEN + 1];         /* "" for a line that holds no key */
        char label[SBX_KEY_LABEL_MAX + 1]; /* after "#", trimmed; the whole line when no key */
};

struct sbx_keys_file {
        size_t n, n_keys, n_bad; /* lines; of them keys; lines that are neither key nor comment */
        struct sbx_key_line *line;
};

/* "e2b_" followed by exactly 40 lowercase hex digits. */
bool sbx_key_valid(const char *key);

/* buf (NUL-terminated, at most SBX_KEYS_FILE_MAX) into *ret, every line kept (at most
 * SBX_KEYS_MAX keys; the lines past them count as bad). Free with sbx_keys_file_done. */
int sbx_keys_file_parse(const char *buf, struct sbx_keys_file *ret);
void sbx_keys_file_done(struct sbx_keys_file *f);

/* The file's text again: keys and comments as they were parsed, with their labels. Caller
 * frees. */
int sbx_keys_file_format(const struct sbx_keys_file *f, char **ret);
