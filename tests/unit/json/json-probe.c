/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the cJSON API answers for each input, one line each, for check-json-static.py, which
 * runs this program twice: linked with libcjson and with common/json-static.c. Inputs on
 * stdin as "<length>\n<bytes>" records. For each: the value parsed with and without
 * require_null_terminated (printed unformatted, or FAIL), its duplicate, a key looked up and
 * deleted without case, the input itself as a string and as a number printed back.
 */
#include <cjson/cJSON.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes as printable ASCII, the rest as \xNN: one line per input whatever it holds. */
static void show_bytes(const char *what, const char *s)
{
        printf(" %s=", what);
        for (; s && *s; s++)
                if (*s >= 0x20 && *s < 0x7f && *s != '\\')
                        putchar(*s);
                else
                        printf("\\x%02x", (unsigned char)*s);
}

static void show(const char *what, const cJSON *j)
{
        char *s = j ? cJSON_PrintUnformatted(j) : NULL;
        show_bytes(what, s ? s : "FAIL");
        free(s);
}

static void probe(const char *in, size_t len)
{
        cJSON *j = cJSON_ParseWithLength(in, len);
        show("parse", j);
        const char *end = NULL;
        cJSON *strict = cJSON_ParseWithLengthOpts(in, len, &end, 1);
        show("strict", strict);
        cJSON_Delete(strict);
        if (j) {
                cJSON *d = cJSON_Duplicate(j, 1);
                show("dup", d);
                cJSON_Delete(d);
                printf(" size=%d num=%d:%.17g", cJSON_GetArraySize(j), cJSON_IsNumber(j),
                       cJSON_IsNumber(j) ? j->valuedouble : 0);
                show_bytes("str", cJSON_IsString(j) ? j->valuestring : "-");
                printf(" true=%d bool=%d null=%d", cJSON_IsTrue(j), cJSON_IsBool(j),
                       cJSON_IsNull(j));
                if (cJSON_IsObject(j) && j->child && j->child->string) {
                        char key[64];
                        snprintf(key, sizeof(key), "%s", j->child->string);
                        for (char *k = key; *k; k++)
                                *k = (char)toupper((unsigned char)*k);
                        printf(" cs=%d", cJSON_GetObjectItemCaseSensitive(j, key) != NULL);
                        cJSON_DeleteItemFromObject(j, key);
                        show("del", j);
                        cJSON_AddItemToObject(j, "added", cJSON_CreateString("x"));
                        cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "arr"),
                                             cJSON_CreateObject());
                        show("added", j);
                }
                cJSON_Delete(j);
        }
        char *text = malloc(len + 1);
        memcpy(text, in, len);
        text[len] = 0;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "s", text);
        cJSON_AddNumberToObject(o, "n", strtod(text, NULL));
        cJSON_AddBoolToObject(o, "b", len % 2);
        cJSON_AddNullToObject(o, "z");
        cJSON_AddTrueToObject(o, "t");
        cJSON_AddObjectToObject(o, "o");
        show("made", o);
        cJSON_Delete(o);
        free(text);
        printf("\n");
}

int main(void)
{
        size_t len;
        while (scanf("%zu", &len) == 1 && getchar() == '\n') {
                char *buf = malloc(len + 1);
                if (!buf || fread(buf, 1, len, stdin) != len)
                        return 1;
                buf[len] = 0;
                probe(buf, len);
                free(buf);
        }
        return 0;
}
