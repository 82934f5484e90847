/* SPDX-License-Identifier: Apache-2.0 */
/* URL query strings: extraction from a raw request target, encoding, decoding. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "url-util.h"

/* The raw query of a request target ("/files?path=%2Fa" → "path=%2Fa"), still encoded, without
 * the fragment. "" when there is none. Returns 0 or -ENOMEM. */
int query_from_target(const char *target, char **ret);

/* Building a query: url_query_append() (common/url-util.h). */

/* Iterate "k=v&k2=v2": from *pos, decode the next pair. Returns 1 with *ret_key / *ret_value
 * (malloc'd; value "" when no '='), 0 at the end, or -errno. */
int query_next_pair(const char *s, size_t *pos, char **ret_key, char **ret_value);
