/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cJSON API of <cjson/cJSON.h> for the binaries sbx places inside a sandbox, which are
 * linked statically (guest-agent/README.md, "Runtime"): Debian ships libcjson only as a shared
 * library. Same structure, same ownership rules and the same leniencies as libcjson 1.7, so
 * that the code of api/ and common/ behaves alike whichever of the two it is linked with:
 *
 * - parsing: whitespace is any byte up to 0x20; a UTF-8 byte order mark is skipped; a number
 *   is the longest run of "0123456789+-.eE" read with strtod (so "01" and "1." are numbers);
 *   control bytes and invalid UTF-8 inside strings are kept as they are; \uXXXX escapes
 *   (surrogate pairs joined) become UTF-8, and one with a non-hex digit is U+0000 (which
 *   ends the C string); arrays and objects nest at most
 *   CJSON_NESTING_LIMIT deep; cJSON_ParseWithLength ignores what follows the value;
 * - printing (unformatted): a number as "%1.15g", or "%1.17g" when that does not read back
 *   within DBL_EPSILON (so 2^53 + 1 prints as 9.00719925474099e+15); NaN and infinities as
 *   null; in strings
 *   '"', '\\', \b \f \n \r \t escaped by name and other bytes below 0x20 as \u00XX, every
 *   other byte as it is; keys in insertion order, duplicates kept;
 * - lookups by key walk the list; cJSON_GetObjectItem and cJSON_DeleteItemFromObject compare
 *   keys without case (ASCII), the ...CaseSensitive ones exactly.
 *
 * Only the functions sbx's static binaries link are here (the linker names any other); the
 * parser and printer are in json-static-text.c.
 * tests/unit/test-json-static.c checks them against libcjson's answers.
 */
#include "json-static.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TYPE(item) ((item)->type & 0xFF)

/* ---- items ---- */

cJSON *sbx_json_item_new(int type)
{
        cJSON *item = calloc(1, sizeof(*item));
        if (item)
                item->type = type;
        return item;
}

void cJSON_Delete(cJSON *item)
{
        while (item) {
                cJSON *next = item->next;
                if (!(item->type & cJSON_IsReference)) {
                        cJSON_Delete(item->child);
                        free(item->valuestring);
                }
                if (!(item->type & cJSON_StringIsConst))
                        free(item->string);
                free(item);
                item = next;
        }
}

void cJSON_free(void *object)
{
        free(object);
}

void *cJSON_malloc(size_t size)
{
        return malloc(size);
}

cJSON *cJSON_CreateNull(void)
{
        return sbx_json_item_new(cJSON_NULL);
}

cJSON *cJSON_CreateTrue(void)
{
        return sbx_json_item_new(cJSON_True);
}

cJSON *cJSON_CreateFalse(void)
{
        return sbx_json_item_new(cJSON_False);
}

cJSON *cJSON_CreateBool(cJSON_bool boolean)
{
        return sbx_json_item_new(boolean ? cJSON_True : cJSON_False);
}

void sbx_json_number_set(cJSON *item, double num)
{
        item->valuedouble = num;
        if (num >= INT_MAX)
                item->valueint = INT_MAX;
        else if (num <= (double)INT_MIN)
                item->valueint = INT_MIN;
        else
                item->valueint = (int)num;
}

cJSON *cJSON_CreateNumber(double num)
{
        cJSON *item = sbx_json_item_new(cJSON_Number);
        if (item)
                sbx_json_number_set(item, num);
        return item;
}

double cJSON_SetNumberHelper(cJSON *object, double number)
{
        sbx_json_number_set(object, number);
        return object->valuedouble;
}

cJSON *cJSON_CreateString(const char *string)
{
        if (!string)
                return NULL;
        cJSON *item = sbx_json_item_new(cJSON_String);
        if (item && !(item->valuestring = strdup(string))) {
                free(item);
                return NULL;
        }
        return item;
}

cJSON *cJSON_CreateArray(void)
{
        return sbx_json_item_new(cJSON_Array);
}

cJSON *cJSON_CreateObject(void)
{
        return sbx_json_item_new(cJSON_Object);
}

cJSON_bool cJSON_IsInvalid(const cJSON *const item)
{
        return item && TYPE(item) == cJSON_Invalid;
}

cJSON_bool cJSON_IsFalse(const cJSON *const item)
{
        return item && TYPE(item) == cJSON_False;
}

cJSON_bool cJSON_IsTrue(const cJSON *const item)
{
        return item && TYPE(item) == cJSON_True;
}

cJSON_bool cJSON_IsBool(const cJSON *const item)
{
        return item && (item->type & (cJSON_True | cJSON_False)) != 0;
}

cJSON_bool cJSON_IsNull(const cJSON *const item)
{
        return item && TYPE(item) == cJSON_NULL;
}

cJSON_bool cJSON_IsNumber(const cJSON *const item)
{
        return item && TYPE(item) == cJSON_Number;
}

cJSON_bool cJSON_IsString(const cJSON *const item)
{
        return item && TYPE(item) == cJSON_String;
}

cJSON_bool cJSON_IsArray(const cJSON *const item)
{
        return item && TYPE(item) == cJSON_Array;
}

cJSON_bool cJSON_IsObject(const cJSON *const item)
{
        return item && TYPE(item) == cJSON_Object;
}

cJSON_bool cJSON_IsRaw(const cJSON *const item)
{
        return item && TYPE(item) == cJSON_Raw;
}

char *cJSON_GetStringValue(const cJSON *const item)
{
        return cJSON_IsString(item) ? item->valuestring : NULL;
}

double cJSON_GetNumberValue(const cJSON *const item)
{
        return cJSON_IsNumber(item) ? item->valuedouble : NAN;
}

/* ---- lists ---- */

int cJSON_GetArraySize(const cJSON *array)
{
        int n = 0;
        for (const cJSON *c = array ? array->child : NULL; c; c = c->next)
                n++;
        return n;
}

cJSON *cJSON_GetArrayItem(const cJSON *array, int index)
{
        cJSON *c = array && index >= 0 ? array->child : NULL;
        while (c && index-- > 0)
                c = c->next;
        return c;
}

static int key_cmp(const char *a, const char *b, cJSON_bool case_sensitive)
{
        if (case_sensitive)
                return strcmp(a, b);
        for (; tolower((unsigned char)*a) == tolower((unsigned char)*b); a++, b++)
                if (!*a)
                        return 0;
        return tolower((unsigned char)*a) - tolower((unsigned char)*b);
}

static cJSON *object_get(const cJSON *object, const char *key, cJSON_bool case_sensitive)
{
        if (!object || !key)
                return NULL;
        for (cJSON *c = object->child; c; c = c->next)
                if (c->string && key_cmp(c->string, key, case_sensitive) == 0)
                        return c;
        return NULL;
}

cJSON *cJSON_GetObjectItem(const cJSON *const object, const char *const string)
{
        return object_get(object, string, 0);
}

cJSON *cJSON_GetObjectItemCaseSensitive(const cJSON *const object, const char *const string)
{
        return object_get(object, string, 1);
}

cJSON_bool cJSON_HasObjectItem(const cJSON *object, const char *string)
{
        return object_get(object, string, 0) != NULL;
}

/* Append; the first child's prev is the last one (libcjson's layout). */
void sbx_json_list_append(cJSON *parent, cJSON *item)
{
        item->next = NULL;
        if (!parent->child) {
                parent->child = item;
                item->prev = item;
                return;
        }
        cJSON *last = parent->child->prev;
        last->next = item;
        item->prev = last;
        parent->child->prev = item;
}

cJSON_bool cJSON_AddItemToArray(cJSON *array, cJSON *item)
{
        if (!array || !item || array == item)
                return 0;
        sbx_json_list_append(array, item);
        return 1;
}

cJSON_bool cJSON_AddItemToObject(cJSON *object, const char *string, cJSON *item)
{
        if (!object || !string || !item || object == item)
                return 0;
        char *key = strdup(string);
        if (!key)
                return 0;
        if (!(item->type & cJSON_StringIsConst))
                free(item->string);
        item->string = key;
        item->type &= ~cJSON_StringIsConst;
        sbx_json_list_append(object, item);
        return 1;
}

cJSON *cJSON_DetachItemViaPointer(cJSON *parent, cJSON *const item)
{
        if (!parent || !item || !parent->child)
                return NULL;
        if (item != parent->child)
                item->prev->next = item->next;
        if (item->next)
                item->next->prev = item->prev;
        if (item == parent->child)
                parent->child = item->next;
        else if (!item->next)
                parent->child->prev = item->prev;
        item->prev = item->next = NULL;
        return item;
}

cJSON *cJSON_DetachItemFromObject(cJSON *object, const char *string)
{
        return cJSON_DetachItemViaPointer(object, object_get(object, string, 0));
}

cJSON *cJSON_DetachItemFromObjectCaseSensitive(cJSON *object, const char *string)
{
        return cJSON_DetachItemViaPointer(object, object_get(object, string, 1));
}

void cJSON_DeleteItemFromObject(cJSON *object, const char *string)
{
        cJSON_Delete(cJSON_DetachItemFromObject(object, string));
}

void cJSON_DeleteItemFromObjectCaseSensitive(cJSON *object, const char *string)
{
        cJSON_Delete(cJSON_DetachItemFromObjectCaseSensitive(object, string));
}

static cJSON *add_new(cJSON *object, const char *name, cJSON *item)
{
        if (item && cJSON_AddItemToObject(object, name, item))
                return item;
        cJSON_Delete(item);
        return NULL;
}

cJSON *cJSON_AddNullToObject(cJSON *const object, const char *const name)
{
        return add_new(object, name, cJSON_CreateNull());
}

cJSON *cJSON_AddTrueToObject(cJSON *const object, const char *const name)
{
        return add_new(object, name, cJSON_CreateTrue());
}

cJSON *cJSON_AddFalseToObject(cJSON *const object, const char *const name)
{
        return add_new(object, name, cJSON_CreateFalse());
}

cJSON *cJSON_AddBoolToObject(cJSON *const object, const char *const name, const cJSON_bool boolean)
{
        return add_new(object, name, cJSON_CreateBool(boolean));
}

cJSON *cJSON_AddNumberToObject(cJSON *const object, const char *const name, const double number)
{
        return add_new(object, name, cJSON_CreateNumber(number));
}

cJSON *cJSON_AddStringToObject(cJSON *const object, const char *const name,
                               const char *const string)
{
        return add_new(object, name, cJSON_CreateString(string));
}

cJSON *cJSON_AddObjectToObject(cJSON *const object, const char *const name)
{
        return add_new(object, name, cJSON_CreateObject());
}

cJSON *cJSON_AddArrayToObject(cJSON *const object, const char *const name)
{
        return add_new(object, name, cJSON_CreateArray());
}

cJSON *cJSON_Duplicate(const cJSON *item, cJSON_bool recurse)
{
        if (!item)
                return NULL;
        cJSON *copy = sbx_json_item_new(item->type & ~cJSON_IsReference);
        if (!copy)
                return NULL;
        copy->valueint = item->valueint;
        copy->valuedouble = item->valuedouble;
        if ((item->valuestring && !(copy->valuestring = strdup(item->valuestring))) ||
            (item->string && !(copy->string = strdup(item->string))))
                goto fail;
        copy->type &= ~cJSON_StringIsConst;
        for (const cJSON *c = recurse ? item->child : NULL; c; c = c->next) {
                cJSON *d = cJSON_Duplicate(c, 1);
                if (!d)
                        goto fail;
                sbx_json_list_append(copy, d);
        }
        return copy;
fail:
        cJSON_Delete(copy);
        return NULL;
}
