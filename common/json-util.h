/* SPDX-License-Identifier: Apache-2.0 */
/* cJSON helpers: ownership, and a depth check before parsing. Header-only; users link cJSON
 * themselves. */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "macros.h"

static inline void cjson_deletep(cJSON **j)
{
        cJSON_Delete(*j); /* NULL-safe */
}
/* A cJSON tree deleted when the variable goes out of scope. */
#define _cleanup_json_ _cleanup_(cjson_deletep)

/* Nesting depth of a JSON text (arrays and objects, strings skipped): check it before
 * cJSON_Parse() to bound the parser's recursion. Pure, no allocation. */
static inline size_t json_depth(const char *buf, size_t len)
{
        size_t depth = 0, max = 0;
        bool in_str = false;
        for (size_t i = 0; i < len; i++) {
                char c = buf[i];
                if (in_str) {
                        if (c == '\\')
                                i++;
                        else if (c == '"')
                                in_str = false;
                        continue;
                }
                if (c == '"') {
                        in_str = true;
                } else if (c == '[' || c == '{') {
                        if (++depth > max)
                                max = depth;
                } else if ((c == ']' || c == '}') && depth > 0) {
                        depth--;
                }
        }
        return max;
}
