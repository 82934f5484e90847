/* SPDX-License-Identifier: Apache-2.0 */
/* json-static's parser and printer (json-static.c says what they answer and why). */
#include "json-static.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macros.h"

#define TYPE(item) ((item)->type & 0xFF)

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
        sbx_json_number_set(item, d);
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
                cJSON *c = sbx_json_item_new(cJSON_Invalid);
                if (!c)
                        return 0;
                sbx_json_list_append(item, c);
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
                cJSON *c = sbx_json_item_new(cJSON_Invalid);
                if (!c)
                        return 0;
                sbx_json_list_append(item, c);
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
        cJSON *item = sbx_json_item_new(cJSON_Invalid);
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
