/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Validation of control-plane request bodies. Every function returns 0 or a negative errno
 * (-EINVAL for a client mistake) and, on failure, points *ret_msg at a static/ thread-local
 * message suitable for the API error body.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress/policy/net-policy.h"
#include "json-util.h" /* json_depth() */

#define JSON_MAX_DEPTH    32
#define TIMEOUT_DEFAULT_S 300
#define TIMEOUT_MAX_S     (24 * 3600) /* E2B's default team limit: 24 h */
/* a template's name: an alias (40) with a ":tag" of E2B's template API (128), or an imported
 * image's "name:tag" */
#define TEMPLATE_NAME_MAX 192
#define MAP_MAX_ENTRIES   128
#define MAP_MAX_KEY       256
#define MAP_MAX_VALUE     (16 * 1024)
#define MAP_MAX_TOTAL     (256 * 1024)

/* Parse a request body: empty → *ret = NULL; otherwise an object no deeper than
 * JSON_MAX_DEPTH. -ELOOP too deep, -EBADMSG not JSON / not an object. */
int json_parse_body(const char *buf, size_t len, cJSON **ret, const char **ret_msg);

/* [A-Za-z0-9][A-Za-z0-9._-]*, optionally ":TAG" of the same characters (an imported image's
 * tag), at most TEMPLATE_NAME_MAX, no "..". */
bool template_name_valid(const char *name);

/* [a-z0-9]{1,63}: sandbox ids (the jailer also uses it as hostname). */
bool sandbox_id_valid(const char *id);

/* "timeout" member of body: absent → def (or -EINVAL when def < 0, i.e. required); must be an
 * integer 1..TIMEOUT_MAX_S. */
int validate_timeout(const cJSON *body, int64_t def, int64_t *ret, const char **ret_msg);

/* An optional map of strings (absent/null → NULL) with the MAP_MAX_* bounds. On success
 * *ret is a detached copy (caller owns) or NULL. */
int validate_string_map(const cJSON *body, const char *field, cJSON **ret, const char **ret_msg);

/* network.maskRequestHost: the Host the sandbox's own server sees on a user port; "${PORT}" in
 * it becomes the port (docs/e2b-wire.md §1.7). */
#define MASK_HOST_MAX        261 /* a 255-byte name, ':' and a 5-digit port */
#define MASK_HOST_PORT_TOKEN "${PORT}"
/* The same for environment variables: a key may not hold '=' either. */
int validate_env_map(const cJSON *body, const char *field, cJSON **ret, const char **ret_msg);

/* A JSON text (len bytes) whose strings hold no NUL, raw or as the escape \u0000 (cJSON would
 * cut the string there). */
int validate_no_nul(const char *text, size_t len, const char **ret_msg);

struct create_params {
        char template_id[TEMPLATE_NAME_MAX + 1];
        int64_t timeout_s;
        cJSON *metadata; /* owned, may be NULL */
        cJSON *env_vars; /* owned, may be NULL */
        bool auto_pause, auto_resume;
        bool pause_drops_memory; /* autoPauseMemory false: onTimeout pause keeps files only */
        /* network.allowPublicTraffic false: user ports need the trafficAccessToken */
        bool private_traffic;
        char mask_host[MASK_HOST_MAX + 1]; /* network.maskRequestHost, "" when unset */
        /* sbx extension: per-sandbox sizes; 0 = the template's */
        unsigned cpu_count, memory_mb, disk_mb;
        /* volumeMounts: owned array of {name, path} strings (checked against the volumes and
         * the mount rules by lifecycle/create.c), NULL when none */
        cJSON *volume_mounts;
        struct net_policy net; /* allow_internet_access, network.allowOut/denyOut as asked */
};

#define SANDBOX_MAX_VOLUME_MOUNTS 16 /* = SBX_JAIL_VOLUMES_MAX */

#define SANDBOX_MAX_CPU       64
#define SANDBOX_MIN_MEMORY_MB 64
#define SANDBOX_MAX_MEMORY_MB (256 * 1024)
#define SANDBOX_MIN_DISK_MB   16
#define SANDBOX_MAX_DISK_MB   (256 * 1024)

/* The optional per-sandbox sizes of a create body, under the member names each API uses (E2B:
 * cpuCount, memoryMB, diskSizeMB; /v1: cpu_count, memory_mb, disk_mb), within the bounds
 * above; absent or null leaves p's 0 (the template's). -EINVAL with *ret_msg. */
int validate_sizes(const cJSON *body, const char *cpu, const char *memory, const char *disk,
                   struct create_params *p, const char **ret_msg);

/* An RFC 3339 date-time ("2025-01-15T10:30:45.123456789+02:00"; 'T' and 'Z' in either case,
 * at most 9 fraction digits) as unix microseconds, the fraction truncated as E2B does. -EINVAL
 * for anything else (a date alone, a missing offset, month 13, Feb 30, second 60). */
int validate_rfc3339_us(const char *s, int64_t *ret_us);

/* v1 (POST /sandboxes) and v2 (POST /v2/sandboxes) create bodies: body parsed from text (len
 * bytes, checked with validate_no_nul). v1 defaults the timeout to 300 s too: the spec's 15 s
 * is never used by an SDK, which always send one. */
int validate_create(const cJSON *body, const char *text, size_t len, struct create_params *ret,
                    const char **ret_msg);
void create_params_done(struct create_params *p);
