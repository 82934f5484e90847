/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The query of GET /v2/sandboxes (and the metadata filter of GET /sandboxes), as E2B's OpenAPI
 * spec and its handler read it (docs/e2b-wire.md §2.5): limit 1..100 (100), nextToken, metadata
 * ("k=v&k2=v2", each pair URL-encoded inside the once-encoded value), state (a comma list of
 * running/paused), order (asc/desc, desc by default: newest first), startedAfter (RFC 3339,
 * at or after), template (an id or alias, no tag). Pure, but for the template lookup.
 *
 * The order is (start, id) both ways as E2B pages it: desc is start DESC then id ASC, asc the
 * exact reverse. nextToken is E2B's cursor: base64url("<start, RFC 3339 with microseconds>__<id>")
 * for desc, with "__asc" appended for asc, naming the last sandbox of the previous page: a page
 * starts after it, so kills and creates between pages never skip or repeat one, and a token
 * replayed under the other order is refused.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/validate.h"

#define LIST_DEFAULT_LIMIT 100
#define LIST_MAX_LIMIT     100
#define LIST_CURSOR_MAX    128 /* an encoded nextToken, NUL included */

enum list_order {
        LIST_DESC,
        LIST_ASC,
};

struct list_cursor {
        int64_t started_us;
        char id[32];
};

/* The raw (decoded once, as libmicrohttpd hands them over) values; any may be NULL. */
struct list_params {
        const char *limit, *next_token, *metadata, *state, *order, *started_after, *template_name;
};

struct list_query {
        unsigned limit;
        enum list_order order;
        bool after; /* a cursor was given */
        struct list_cursor cursor;
        bool started_after_set;
        int64_t started_after_us;
        char template_name[TEMPLATE_NAME_MAX + 1]; /* "" for none */
        cJSON *metadata;                           /* owned object of strings, or NULL */
        bool want_running, want_paused;
};

/* Parse p into *ret (release with list_query_done()). -EINVAL with *ret_msg, a static message
 * in E2B's words, for a bad value. Empty values count as absent. */
int list_query_parse(const struct list_params *p, struct list_query *ret, const char **ret_msg);
void list_query_done(struct list_query *q);

/* <0, 0, >0 as sandbox a comes before, with, after b in the order. */
int list_compare(enum list_order order, int64_t a_us, const char *a_id, int64_t b_us,
                 const char *b_id);
/* Whether (started_us, id) comes after q's cursor (true without one). */
bool list_past_cursor(const struct list_query *q, int64_t started_us, const char *id);

/* The nextToken naming (started_us, id) for order into out. -ENAMETOOLONG if it does not fit. */
int list_cursor_encode(int64_t started_us, const char *id, enum list_order order,
                       char out[static LIST_CURSOR_MAX]);
/* The cursor and order a nextToken carries; -EINVAL for anything else. */
int list_cursor_decode(const char *token, struct list_cursor *ret, enum list_order *ret_order);

/* The template names the filter name stands for under state_dir, as an owned array of strings
 * (*ret): a snapshot (by id or by one of its aliases) stands for its id and every alias, any
 * other template for itself; an empty array for a template that does not exist (the list is
 * then empty, as on E2B). -ENOMEM. */
int list_template_names(const char *state_dir, const char *name, cJSON **ret);
/* Whether template_id is one of names (an array of strings). */
bool list_template_matches(const cJSON *names, const char *template_id);
