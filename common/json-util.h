/* SPDX-License-Identifier: Apache-2.0 */
/* cJSON helpers: ownership, and the depth and NUL checks before parsing. Header-only; users
 * link cJSON themselves. */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

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

/* Whether a JSON text holds a NUL character, raw or escaped ("\u0000") inside a string.
 * cJSON ends a string at a NUL (it takes raw control bytes inside strings too), so
 * {"A\u0000B":"x"} would be read as the key "A" and "/a\u0000/../b" as "/a": a text holding
 * one is refused before parsing instead of being read as something else. Pure. */
static inline bool json_has_nul(const char *text, size_t len)
{
        bool in_str = false;
        if (memchr(text, 0, len))
                return true;
        for (size_t i = 0; i < len; i++) {
                if (!in_str) {
                        in_str = text[i] == '"';
                        continue;
                }
                if (text[i] == '"') {
                        in_str = false;
                } else if (text[i] == '\\' && i + 1 < len) {
                        if (text[i + 1] == 'u' && i + 5 < len &&
                            strncmp(text + i + 2, "0000", 4) == 0)
                                return true;
                        i++; /* the escaped character, '"' and '\\' included */
                }
        }
        return false;
}
