/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One JSON object per file, the record of something sbxd keeps in the state dir (a volume, a
 * secret): written whole and atomically (write_file_atomic(): after a crash the file holds the
 * old or the new record, never a mix), read back bounded and without following a symlink.
 * The printed text is wiped from memory before it is freed either way, as a record may hold a
 * secret's value. json_file_read() reads any other JSON file sbxd keeps whole (a template.json,
 * a build record) the same bounded way, without the wipe.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>
#include <sys/types.h>

#define JSON_RECORD_MAX (64 * 1024) /* a record's size at most, read or written */

/* Replace path with o printed on one line, mode for a new file. 0, -ENOMEM, -EMSGSIZE past
 * JSON_RECORD_MAX, or write_file_atomic()'s -errno. */
int json_record_write(const char *path, const cJSON *o, mode_t mode);
/* The record at path (opened O_NOFOLLOW) parsed into *ret (the caller's to free): 0, -errno of
 * open (-ENOENT, -ELOOP for a symlink, ...), -EFBIG past JSON_RECORD_MAX, -EBADMSG when it is
 * not a JSON object. */
int json_record_read(const char *path, cJSON **ret);
/* Any JSON file at path (opened O_NOFOLLOW, at most max bytes) parsed: NULL when it is missing,
 * a symlink, larger, unreadable or not JSON. Its text is not wiped: not for a secret. */
cJSON *json_file_read(const char *path, size_t max);
