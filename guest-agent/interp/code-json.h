/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pure helpers of the code interpreter (no I/O, unit-tested): JSON
 * strings from untrusted bytes (invalid UTF-8 becomes U+FFFD), ISO-8601 timestamps, bash $'...'
 * quoting and the bash kernel's completion marker.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* Append s[0..n) as a quoted JSON string; control characters escaped, invalid UTF-8 replaced
 * by U+FFFD. */
int json_add_string(struct buf *b, const char *s, size_t n);

/* Length of the longest prefix of s[0..n) that does not end inside a UTF-8 sequence that the
 * following bytes could still complete. */
size_t utf8_complete_prefix(const char *s, size_t n);

/* Current UTC time as 2026-11-29T15:41:15.123456Z (out >= 32 bytes). */
void iso_timestamp(char out[static 40]);

/* Append s[0..n) as a bash $'...' word (every byte survives, NUL excepted). */
int bash_quote(struct buf *b, const char *s, size_t n);

/*
 * The bash kernel ends each command line with "\x1eSBX<nonce>:<seq>:<status>\x1e" on stderr.
 * Scan buf for it: returns 1 and sets *ret_start (marker offset), *ret_end (offset after it),
 * seq and status when a whole marker is present; 0 when none is, with *ret_start = the length
 * of the data that is certainly not part of a marker (the rest may be a marker's beginning).
 */
int bash_marker_scan(const char *buf, size_t len, const char *nonce, size_t *ret_start,
                     size_t *ret_end, unsigned *ret_seq, int *ret_status);
