/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Secrets: named values the egress proxy puts into a sandbox's outbound requests
 * (${e2b.secrets.<name>} in a network transform header) and that nothing ever reads back
 * (E2B's /secrets, docs/e2b-wire.md "Secrets"; server/egress/README.md "Credentials").
 *
 * One record per secret, <state>/secrets/<secretID>.json, mode 0600 in a 0700 directory, written
 * atomically; the value is in the record and in sbxd's memory only. Reads through this header
 * hand out metadata (struct secret_info); the value only through secret_store_value(), for the
 * egress proxy.
 *
 * Limits: SECRETS_MAX secrets; names 1..SECRET_NAME_MAX bytes without '{', '}', control
 * characters or whitespace, lowercased, not starting with "sec_" (ids); values
 * 1..SECRET_VALUE_MAX bytes without control characters but tab (they go into HTTP header
 * values); metadata
 * as E2B: SECRET_META_ENTRIES entries, keys <= 128, values <= 1024, <= 8192 bytes in total.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#define SECRETS_MAX         256
#define SECRET_NAME_MAX     63 /* a path segment of the routes (ROUTE_ID_MAX - 1) */
#define SECRET_VALUE_MAX    8192
#define SECRET_ID_LEN       28 /* "sec_" + 24 hex digits */
#define SECRET_META_ENTRIES 32
#define SECRET_META_KEY_MAX 128
#define SECRET_META_VAL_MAX 1024
#define SECRET_META_TOTAL   8192
#define SECRET_ID_PREFIX    "sec_"
#define SECRETS_DIRNAME     "secrets"

struct secret_store;

struct secret_info {
        char id[SECRET_ID_LEN + 1];
        char name[SECRET_NAME_MAX + 1];
        int64_t version;
        int64_t created_ms, updated_ms; /* unix milliseconds */
        cJSON *metadata;                /* an object of strings, owned; secret_info_done() */
};
void secret_info_done(struct secret_info *i);

/* Creates <state>/secrets (0700) if needed and loads every record; a record that does not
 * parse is skipped with a warning (never deleted). */
int secret_store_open(const char *state_dir, struct secret_store **ret);
void secret_store_free(struct secret_store *s);

/* Checks for the wire: NULL when fine, else a message for a 400. name_lower gets the
 * canonical (lowercased) name. */
const char *secret_name_check(const char *name, char name_lower[static SECRET_NAME_MAX + 1]);
const char *secret_value_check(const char *value);
const char *secret_metadata_check(const cJSON *meta); /* NULL or an object of strings */

/* -EEXIST name taken, -EDQUOT SECRETS_MAX reached; input must have passed the checks. */
int secret_create(struct secret_store *s, const char *name, const char *value,
                  const cJSON *metadata, struct secret_info *ret);
/* By id or name: a new version (value and, when given, metadata replaced). -ENOENT. */
int secret_update(struct secret_store *s, const char *ref, const char *value, const cJSON *metadata,
                  struct secret_info *ret);
int secret_get(struct secret_store *s, const char *ref, struct secret_info *ret);
int secret_delete(struct secret_store *s, const char *ref);
/* All of them, oldest first; *ret (n entries) freed with secret_info_done each and free. */
int secret_list(struct secret_store *s, struct secret_info **ret, size_t *ret_n);
/* The current value of the secret named name into buf (NUL-terminated): its length, -ENOENT,
 * -ENOBUFS. For the egress proxy only. */
int secret_store_value(struct secret_store *s, const char *name, char *buf, size_t size);
