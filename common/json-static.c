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
 * Only the functions sbx's static binaries link are here (the linker names any other).
 * tests/unit/test-json-static.c checks them against libcjson's answers.
 */
#include <cjson/cJSON.h>

#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TYPE(item) ((item)->type & 0xFF)

/* ---- items ---- */

static cJSON *item_new(int type)
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
        return item_new(cJSON_NULL);
}

cJSON *cJSON_CreateTrue(void)
{
        return item_new(cJSON_True);
}

cJSON *cJSON_CreateFalse(void)
{
        return item_new(cJSON_False);
}

cJSON *cJSON_CreateBool(cJSON_bool boolean)
{
        return item_new(boolean ? cJSON_True : cJSON_False);
}

static void number_set(cJSON *item, double num)
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
        cJSON *item = item_new(cJSON_Number);
        if (item)
                number_set(item, num);
        return item;
}

double cJSON_SetNumberHelper(cJSON *object, double number)
{
        number_set(object, number);
        return object->valuedouble;
}

cJSON *cJSON_CreateString(const char *string)
{
        if (!string)
                return NULL;
        cJSON *item = item_new(cJSON_String);
        if (item && !(item->valuestring = strdup(string))) {
                free(item);
                return NULL;
        }
        return item;
}

cJSON *cJSON_CreateArray(void)
{
        return item_new(cJSON_Array);
}

cJSON *cJSON_CreateObject(void)
{
        return item_new(cJSON_Object);
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
static void list_append(cJSON *parent, cJSON *item)
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
        list_append(array, item);
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
        list_append(object, item);
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
        cJSON *copy = item_new(item->type & ~cJSON_IsReference);
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
                list_append(copy, d);
        }
        return copy;
fail:
        cJSON_Delete(copy);
        return NULL;
}

/* ---- parsing ---- */

struct in {
        const unsigned char *p, *end;
        unsigned depth;
};

static cJSON_bool parse_value(struct in *in, cJSON *item);

static void skip_ws(struct in *in)
{
        while (in->p < in->end && *in->p <= 32)
                in->p++;
}

static cJSON_bool have(const struct in *in, const char *word)
{
        size_t n = strlen(word);
        return (size_t)(in->end - in->p) >= n && memcmp(in->p, word, n) == 0;
}

static cJSON_bool parse_number(struct in *in, cJSON *item)
{
        char small[64], *buf = small;
        size_t n = 0;
        while (in->p + n < in->end && in->p[n] && strchr("0123456789+-.eE", in->p[n]))
                n++;
        if (n >= sizeof(small) && !(buf = malloc(n + 1)))
                return 0;
        memcpy(buf, in->p, n);
        buf[n] = 0;
        char *stop;
        double d = strtod(buf, &stop);
        size_t used = (size_t)(stop - buf);
        if (buf != small)
                free(buf);
        if (used == 0)
                return 0;
        item->type = cJSON_Number;
        number_set(item, d);
        in->p += used;
        return 1;
}

static unsigned hex4(const unsigned char *s)
{
        unsigned v = 0;
        for (int i = 0; i < 4; i++) {
                int c = s[i], d;
                if (c >= '0' && c <= '9')
                        d = c - '0';
                else if (c >= 'a' && c <= 'f')
                        d = c - 'a' + 10;
                else if (c >= 'A' && c <= 'F')
                        d = c - 'A' + 10;
                else
                        return 0; /* libcjson's answer for a bad digit */
                v = v << 4 | (unsigned)d;
        }
        return v;
}

/* \uXXXX (and its low surrogate) at s → UTF-8 at out; bytes of input used, 0 if invalid. */
static size_t utf16_escape(const unsigned char *s, const unsigned char *end, char **out)
{
        unsigned cp, lo;
        size_t used = 6;
        if (end - s < 6 || ((cp = hex4(s + 2)) >= 0xDC00 && cp <= 0xDFFF))
                return 0;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - s < 12 || s[6] != '\\' || s[7] != 'u' || (lo = hex4(s + 8)) < 0xDC00 ||
                    lo > 0xDFFF)
                        return 0;
                cp = 0x10000 + (((cp & 0x3FF) << 10) | (lo & 0x3FF));
                used = 12;
        }
        unsigned char *o = (unsigned char *)*out;
        if (cp < 0x80) {
                *o++ = (unsigned char)cp;
        } else if (cp < 0x800) {
                *o++ = (unsigned char)(0xC0 | cp >> 6);
                *o++ = (unsigned char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
                *o++ = (unsigned char)(0xE0 | cp >> 12);
                *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (unsigned char)(0x80 | (cp & 0x3F));
        } else {
                *o++ = (unsigned char)(0xF0 | cp >> 18);
                *o++ = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                *o++ = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                *o++ = (unsigned char)(0x80 | (cp & 0x3F));
        }
        *out = (char *)o;
        return used;
}

/* A string at in->p (its opening quote) into a new NUL-terminated buffer. */
static char *parse_string_raw(struct in *in)
{
        const unsigned char *s = in->p + 1, *q = s;
        if (in->p >= in->end || *in->p != '"')
                return NULL;
        /* find the closing quote; the decoded text is never longer than the input */
        while (q < in->end && *q != '"') {
                if (*q == '\\' && q + 1 < in->end)
                        q++;
                q++;
        }
        if (q >= in->end)
                return NULL;
        char *out = malloc((size_t)(q - s) + 1), *o = out;
        if (!out)
                return NULL;
        while (s < q) {
                if (*s != '\\') {
                        *o++ = (char)*s++;
                        continue;
                }
                size_t used = 2;
                switch (s[1]) {
                case 'b':
                        *o++ = '\b';
                        break;
                case 'f':
                        *o++ = '\f';
                        break;
                case 'n':
                        *o++ = '\n';
                        break;
                case 'r':
                        *o++ = '\r';
                        break;
                case 't':
                        *o++ = '\t';
                        break;
                case '"':
                case '\\':
                case '/':
                        *o++ = (char)s[1];
                        break;
                case 'u':
                        used = utf16_escape(s, q, &o);
                        break;
                default:
                        used = 0;
                        break;
                }
                if (!used) {
                        free(out);
                        return NULL;
                }
                s += used;
        }
        *o = 0;
        in->p = q + 1;
        return out;
}

static cJSON_bool parse_array(struct in *in, cJSON *item)
{
        if (in->depth >= CJSON_NESTING_LIMIT)
                return 0;
        in->depth++;
        item->type = cJSON_Array;
        in->p++;
        skip_ws(in);
        if (in->p < in->end && *in->p == ']') {
                in->p++;
                in->depth--;
                return 1;
        }
        for (;;) {
                cJSON *c = item_new(cJSON_Invalid);
                if (!c)
                        return 0;
                list_append(item, c);
                skip_ws(in);
                if (!parse_value(in, c))
                        return 0;
                skip_ws(in);
                if (in->p >= in->end)
                        return 0;
                if (*in->p == ']')
                        break;
                if (*in->p++ != ',')
                        return 0;
        }
        in->p++;
        in->depth--;
        return 1;
}

static cJSON_bool parse_object(struct in *in, cJSON *item)
{
        if (in->depth >= CJSON_NESTING_LIMIT)
                return 0;
        in->depth++;
        item->type = cJSON_Object;
        in->p++;
        skip_ws(in);
        if (in->p < in->end && *in->p == '}') {
                in->p++;
                in->depth--;
                return 1;
        }
        for (;;) {
                cJSON *c = item_new(cJSON_Invalid);
                if (!c)
                        return 0;
                list_append(item, c);
                skip_ws(in);
                if (!(c->string = parse_string_raw(in)))
                        return 0;
                skip_ws(in);
                if (in->p >= in->end || *in->p++ != ':')
                        return 0;
                skip_ws(in);
                if (!parse_value(in, c))
                        return 0;
                skip_ws(in);
                if (in->p >= in->end)
                        return 0;
                if (*in->p == '}')
                        break;
                if (*in->p++ != ',')
                        return 0;
        }
        in->p++;
        in->depth--;
        return 1;
}

static cJSON_bool parse_value(struct in *in, cJSON *item)
{
        if (in->p >= in->end)
                return 0;
        if (have(in, "null")) {
                item->type = cJSON_NULL;
                in->p += 4;
                return 1;
        }
        if (have(in, "false")) {
                item->type = cJSON_False;
                in->p += 5;
                return 1;
        }
        if (have(in, "true")) {
                item->type = cJSON_True;
                item->valueint = 1;
                in->p += 4;
                return 1;
        }
        switch (*in->p) {
        case '"':
                item->type = cJSON_String;
                return (item->valuestring = parse_string_raw(in)) != NULL;
        case '[':
                return parse_array(in, item);
        case '{':
                return parse_object(in, item);
        case '-':
                return parse_number(in, item);
        default:
                return *in->p >= '0' && *in->p <= '9' && parse_number(in, item);
        }
}

cJSON *cJSON_ParseWithLengthOpts(const char *value, size_t buffer_length,
                                 const char **return_parse_end, cJSON_bool require_null_terminated)
{
        if (!value || buffer_length == 0)
                return NULL;
        struct in in = {.p = (const unsigned char *)value,
                        .end = (const unsigned char *)value + buffer_length};
        if (buffer_length >= 3 && memcmp(value, "\xEF\xBB\xBF", 3) == 0)
                in.p += 3;
        cJSON *item = item_new(cJSON_Invalid);
        if (!item)
                return NULL;
        skip_ws(&in);
        cJSON_bool ok = parse_value(&in, item);
        if (ok && require_null_terminated) {
                skip_ws(&in);
                ok = in.p < in.end && *in.p == 0;
        }
        if (!ok) {
                cJSON_Delete(item);
                return NULL;
        }
        if (return_parse_end)
                *return_parse_end = (const char *)in.p;
        return item;
}

cJSON *cJSON_ParseWithLength(const char *value, size_t buffer_length)
{
        return cJSON_ParseWithLengthOpts(value, buffer_length, NULL, 0);
}

cJSON *cJSON_ParseWithOpts(const char *value, const char **return_parse_end,
                           cJSON_bool require_null_terminated)
{
        return value ? cJSON_ParseWithLengthOpts(value, strlen(value) + 1, return_parse_end,
                                                 require_null_terminated)
                     : NULL;
}

cJSON *cJSON_Parse(const char *value)
{
        return cJSON_ParseWithOpts(value, NULL, 0);
}

/* ---- printing ---- */

struct out {
        char *buf;
        size_t len, cap;
        cJSON_bool failed;
};

static void put(struct out *o, const char *s, size_t n)
{
        if (o->failed)
                return;
        if (o->len + n + 1 > o->cap) {
                size_t cap = o->cap ? o->cap : 256;
                while (cap < o->len + n + 1)
                        cap *= 2;
                char *b = realloc(o->buf, cap);
                if (!b) {
                        o->failed = 1;
                        return;
                }
                o->buf = b;
                o->cap = cap;
        }
        memcpy(o->buf + o->len, s, n);
        o->len += n;
        o->buf[o->len] = 0;
}

static void put_str(struct out *o, const char *s)
{
        put(o, s, strlen(s));
}

static void print_number(struct out *o, const cJSON *item)
{
        char buf[32];
        double d = item->valuedouble, back;
        if (isnan(d) || isinf(d))
                snprintf(buf, sizeof(buf), "null");
        else {
                snprintf(buf, sizeof(buf), "%1.15g", d);
                /* libcjson's test: equal within DBL_EPSILON of the larger, so some doubles
                 * print with 15 digits and do not read back exactly (as before) */
                if (sscanf(buf, "%lg", &back) != 1 ||
                    fabs(back - d) > fmax(fabs(back), fabs(d)) * DBL_EPSILON)
                        snprintf(buf, sizeof(buf), "%1.17g", d);
        }
        put_str(o, buf);
}

static void print_string(struct out *o, const char *s)
{
        put(o, "\"", 1);
        for (const char *run = s; s && *s; run = s) {
                while (*s && *s != '"' && *s != '\\' && (unsigned char)*s >= 0x20)
                        s++;
                put(o, run, (size_t)(s - run));
                if (!*s)
                        break;
                char esc[8];
                switch (*s) {
                case '"':
                case '\\':
                        esc[0] = '\\', esc[1] = *s, esc[2] = 0;
                        break;
                case '\b':
                        strcpy(esc, "\\b");
                        break;
                case '\f':
                        strcpy(esc, "\\f");
                        break;
                case '\n':
                        strcpy(esc, "\\n");
                        break;
                case '\r':
                        strcpy(esc, "\\r");
                        break;
                case '\t':
                        strcpy(esc, "\\t");
                        break;
                default:
                        snprintf(esc, sizeof(esc), "\\u%04x", (unsigned char)*s);
                }
                put_str(o, esc);
                s++;
        }
        put(o, "\"", 1);
}

static void print_value(struct out *o, const cJSON *item, unsigned depth)
{
        if (depth > CJSON_NESTING_LIMIT) {
                o->failed = 1;
                return;
        }
        switch (TYPE(item)) {
        case cJSON_NULL:
                put_str(o, "null");
                return;
        case cJSON_False:
                put_str(o, "false");
                return;
        case cJSON_True:
                put_str(o, "true");
                return;
        case cJSON_Number:
                print_number(o, item);
                return;
        case cJSON_String:
                print_string(o, item->valuestring);
                return;
        case cJSON_Raw:
                if (!item->valuestring)
                        o->failed = 1;
                else
                        put_str(o, item->valuestring);
                return;
        case cJSON_Array:
        case cJSON_Object: {
                cJSON_bool obj = TYPE(item) == cJSON_Object;
                put(o, obj ? "{" : "[", 1);
                for (const cJSON *c = item->child; c; c = c->next) {
                        if (obj) {
                                if (!c->string) {
                                        o->failed = 1;
                                        return;
                                }
                                print_string(o, c->string);
                                put(o, ":", 1);
                        }
                        print_value(o, c, depth + 1);
                        if (c->next)
                                put(o, ",", 1);
                }
                put(o, obj ? "}" : "]", 1);
                return;
        }
        default:
                o->failed = 1;
        }
}

char *cJSON_PrintUnformatted(const cJSON *item)
{
        struct out o = {0};
        if (!item)
                return NULL;
        print_value(&o, item, 0);
        if (o.failed) {
                free(o.buf);
                return NULL;
        }
        return o.buf;
}
