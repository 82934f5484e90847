/* SPDX-License-Identifier: Apache-2.0 */
/* Every template of the state dir (<state>/templates/<name>/template.json), summarised. */
#pragma once

#include <cjson/cJSON.h>

#define TEMPLATE_LIST_MAX 4096 /* templates listed; more are left out (logged) */

/* An array of {name, kind, cpuCount, memoryMB, diskSizeMB, layers, templateID?, buildID?,
 * base?}, sorted by name. kind: "built" (through the template API: template.json has `build`),
 * "image" (imported: `image`), "snapshot" (every layer in the layer store, no `build`), else
 * "builtin". A dir whose template.json cannot be read or parsed is left out. 0 with *ret, or
 * -ENOMEM. */
int template_list(const char *state_dir, cJSON **ret);
