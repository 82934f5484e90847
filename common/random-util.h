/* SPDX-License-Identifier: Apache-2.0 */
/* Identifiers and secrets from getrandom(2). */
#pragma once

#include <stddef.h>

/* Fill buf with n cryptographically random bytes. Returns 0 or -errno. */
int random_bytes(void *buf, size_t n);
/* Write 2*n lowercase hex digits of random data plus NUL into out (size >= 2n+1). */
int random_hex(char *out, size_t n);
/* A sandbox id: 20 chars of [a-z0-9], starting with a letter, NUL-terminated (out >= 21). */
int random_sandbox_id(char out[static 21]);
