/* SPDX-License-Identifier: Apache-2.0 */
/* cJSON ownership helpers. Header-only; users link cJSON themselves. */
#pragma once

#include <cjson/cJSON.h>

#include "macros.h"

static inline void cjson_deletep(cJSON **j)
{
        cJSON_Delete(*j); /* NULL-safe */
}
/* A cJSON tree deleted when the variable goes out of scope. */
#define _cleanup_json_ _cleanup_(cjson_deletep)
