/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Inside json-static (the cJSON API of the static binaries, json-static.c): what its items
 * and its parser share. Nothing else includes this; users include <cjson/cJSON.h>.
 */
#pragma once

#include <cjson/cJSON.h>

/* A zeroed item of type; NULL on ENOMEM. */
cJSON *sbx_json_item_new(int type);
/* valuedouble = num, valueint = num clamped to int, as libcjson sets them. */
void sbx_json_number_set(cJSON *item, double num);
/* Append item to parent's children (the first child's prev is the last, as libcjson keeps). */
void sbx_json_list_append(cJSON *parent, cJSON *item);
