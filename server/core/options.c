/* SPDX-License-Identifier: Apache-2.0 */
/* Setting, showing and copying one option's value, by its row (options.h). */
#include "core/options.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/server-config.h"
#include "macros.h"

const struct sbxd_option *option_find(const char *name)
{
        for (size_t i = 0; i < sbxd_n_options; i++)
                if (sbxd_options[i].kind != OPTION_SECTION &&
                    strcmp(sbxd_options[i].name, name) == 0)
                        return &sbxd_options[i];
        return NULL;
}

size_t option_index(const struct sbxd_option *o)
{
        return (size_t)(o - sbxd_options);
}

static void *field(const struct sbxd_option *o, struct sbxd_config *c)
{
        return (char *)c + o->offset;
}

static const void *cfield(const struct sbxd_option *o, const struct sbxd_config *c)
{
        return (const char *)c + o->offset;
}

static int fail(char *err, size_t len, const char *fmt, ...) _printf_(3, 4);
static int fail(char *err, size_t len, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, len, fmt, ap);
        va_end(ap);
        return -EINVAL;
}

static int set_string(const struct sbxd_option *o, struct sbxd_config *c, const char *value,
                      bool from_file, char *err, size_t errlen)
{
        char *copy;
        bool word = o->keyword && strcmp(value, o->keyword) == 0;
        if (o->kind == OPTION_PATH && value[0] != '/' && !word) {
                char cwd[PATH_MAX];
                if (from_file)
                        return fail(err, errlen, "'%s' is not an absolute path", value);
                if (!getcwd(cwd, sizeof(cwd)))
                        return fail(err, errlen, "'%s': no working directory: %m", value);
                if (asprintf(&copy, "%s/%s", cwd, value) < 0)
                        return -ENOMEM;
        } else if (!(copy = strdup(value))) {
                return -ENOMEM;
        }
        char **f = field(o, c);
        free(*f);
        *f = copy;
        return 0;
}

static int set_uint(const struct sbxd_option *o, struct sbxd_config *c, const char *value,
                    char *err, size_t errlen)
{
        char *end;
        errno = 0;
        unsigned long long v = strtoull(value, &end, 10);
        if (value[0] < '0' || value[0] > '9' || *end || errno || v < o->min || v > o->max)
                return fail(err, errlen, "'%s' is not a whole number in %" PRIu64 "..%" PRIu64,
                            value, o->min, o->max);
        if (o->size == sizeof(uint64_t))
                *(uint64_t *)field(o, c) = v;
        else
                *(unsigned *)field(o, c) = (unsigned)v;
        return 0;
}

static int set_double(const struct sbxd_option *o, struct sbxd_config *c, const char *value,
                      char *err, size_t errlen)
{
        char *end;
        errno = 0;
        double d = strtod(value, &end);
        if (value[0] < '0' || value[0] > '9' || *end || errno || !(d >= (double)o->min) ||
            !(d <= (double)o->max))
                return fail(err, errlen, "'%s' is not a number in %" PRIu64 "..%" PRIu64, value,
                            o->min, o->max);
        *(double *)field(o, c) = d;
        return 0;
}

/* bytes as a size option takes it: with the largest of T, G, M, K that divides it, else bare
 * (in unit bytes). */
static void format_size(uint64_t bytes, uint64_t unit, char *buf, size_t len)
{
        static const char units[] = "KMGT";
        for (int i = 3; i >= 0; i--) {
                uint64_t u = 1ULL << (10 * (i + 1));
                if (bytes && bytes % u == 0) {
                        snprintf(buf, len, "%" PRIu64 "%c", bytes / u, units[i]);
                        return;
                }
        }
        snprintf(buf, len, "%" PRIu64, bytes / (unit ? unit : 1));
}

static int set_size(const struct sbxd_option *o, struct sbxd_config *c, const char *value,
                    char *err, size_t errlen)
{
        uint64_t v;
        char lo[32], hi[32];
        if (config_parse_size_unit(value, o->unit, &v) < 0 || v < o->min || v > o->max) {
                format_size(o->min, 1, lo, sizeof(lo));
                format_size(o->max, 1, hi, sizeof(hi));
                return fail(err, errlen,
                            "'%s' is not a size in %s..%s (a number of %s, or with K, M, G or T)",
                            value, lo, hi, o->unit == 1 ? "bytes" : "MiB");
        }
        *(uint64_t *)field(o, c) = v;
        return 0;
}

static size_t *list_count(const struct sbxd_option *o, struct sbxd_config *c)
{
        return (size_t *)((char *)c + o->count_offset);
}

static int set_list(const struct sbxd_option *o, struct sbxd_config *c, const char *value,
                    char *err, size_t errlen)
{
        char ***v = field(o, c);
        size_t *n = list_count(o, c);
        if (*n >= o->max)
                return fail(err, errlen, "'%s' is one too many (at most %" PRIu64 " values)", value,
                            o->max);
        char **nv = reallocarray(*v, *n + 1, sizeof(**v));
        if (!nv)
                return -ENOMEM;
        *v = nv;
        if (!(nv[*n] = strdup(value)))
                return -ENOMEM;
        (*n)++;
        return 0;
}

static void store_index(const struct sbxd_option *o, void *f, unsigned v)
{
        if (o->size == sizeof(bool))
                *(bool *)f = v != 0;
        else
                *(unsigned *)f = v;
}

static unsigned load_index(const struct sbxd_option *o, const void *f)
{
        return o->size == sizeof(bool) ? *(const bool *)f : *(const unsigned *)f;
}

static int set_enum(const struct sbxd_option *o, struct sbxd_config *c, const char *value,
                    char *err, size_t errlen)
{
        char choices[256] = "";
        for (unsigned i = 0; o->names[i]; i++) {
                if (strcmp(o->names[i], value) == 0) {
                        store_index(o, field(o, c), i);
                        return 0;
                }
                size_t l = strlen(choices);
                snprintf(choices + l, sizeof(choices) - l, "%s%s", i ? ", " : "", o->names[i]);
        }
        return fail(err, errlen, "'%s' is not one of %s", value, choices);
}

int option_set(const struct sbxd_option *o, struct sbxd_config *c, const char *value,
               bool from_file, char *err, size_t errlen)
{
        const char *why = NULL;
        if (!*value)
                return fail(err, errlen, "no value (leave the option out for its default)");
        if (strlen(value) >= OPTION_MAX_LINE)
                return fail(err, errlen, "value longer than %d bytes", OPTION_MAX_LINE - 1);
        if (o->check && o->check(value, &why) < 0)
                return fail(err, errlen, "'%s': %s", value, why ? why : "invalid");
        switch (o->kind) {
        case OPTION_STRING:
        case OPTION_PATH:
                return set_string(o, c, value, from_file, err, errlen);
        case OPTION_UINT:
                return set_uint(o, c, value, err, errlen);
        case OPTION_DOUBLE:
                return set_double(o, c, value, err, errlen);
        case OPTION_ENUM:
                return set_enum(o, c, value, err, errlen);
        case OPTION_SIZE:
                return set_size(o, c, value, err, errlen);
        case OPTION_LIST:
                return set_list(o, c, value, err, errlen);
        case OPTION_SECTION:
        case OPTION_COMMAND:
                break;
        }
        return fail(err, errlen, "not a setting");
}

const char *option_format(const struct sbxd_option *o, const struct sbxd_config *c, char *buf,
                          size_t len)
{
        const void *f = cfield(o, c);
        buf[0] = 0;
        switch (o->kind) {
        case OPTION_STRING:
        case OPTION_PATH:
                snprintf(buf, len, "%s", *(char *const *)f ? *(char *const *)f : "");
                break;
        case OPTION_UINT:
                if (o->size == sizeof(uint64_t))
                        snprintf(buf, len, "%" PRIu64, *(const uint64_t *)f);
                else
                        snprintf(buf, len, "%u", *(const unsigned *)f);
                /* 0 is "unset" for rows whose default is derived at start */
                if (!o->def && o->min > 0 && strcmp(buf, "0") == 0)
                        buf[0] = 0;
                break;
        case OPTION_DOUBLE:
                snprintf(buf, len, "%g", *(const double *)f);
                break;
        case OPTION_ENUM:
                snprintf(buf, len, "%s", o->names[load_index(o, f)]);
                break;
        case OPTION_SIZE:
                /* 0 is "unset" when the default is derived at start */
                if (*(const uint64_t *)f || o->def)
                        format_size(*(const uint64_t *)f, o->unit, buf, len);
                break;
        case OPTION_LIST: {
                char *const *v = *(char *const *const *)f;
                size_t n = *(const size_t *)((const char *)c + o->count_offset), used = 0;
                for (size_t i = 0; i < n && used < len; i++)
                        used +=
                            (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", v[i]);
                break;
        }
        case OPTION_SECTION:
        case OPTION_COMMAND:
                break;
        }
        return buf;
}

void option_clear(const struct sbxd_option *o, struct sbxd_config *c)
{
        void *f = field(o, c);
        if (o->kind == OPTION_STRING || o->kind == OPTION_PATH) {
                free(*(char **)f);
                *(char **)f = NULL;
        } else if (o->kind == OPTION_LIST) {
                char **v = *(char ***)f;
                size_t *n = list_count(o, c);
                for (size_t i = 0; i < *n; i++)
                        free(v[i]);
                free(v);
                *(char ***)f = NULL;
                *n = 0;
        } else if (o->kind != OPTION_SECTION && o->kind != OPTION_COMMAND) {
                memset(f, 0, o->size);
        }
}

void option_copy_scalar(const struct sbxd_option *o, struct sbxd_config *dst,
                        const struct sbxd_config *src)
{
        void *d = field(o, dst);
        const void *s = cfield(o, src);
        switch (o->size) {
        case sizeof(uint64_t): {
                uint64_t v;
                memcpy(&v, s, sizeof(v)); /* a double too: its bits, in one store */
                __atomic_store_n((uint64_t *)d, v, __ATOMIC_RELAXED);
                break;
        }
        case sizeof(unsigned):
                __atomic_store_n((unsigned *)d, *(const unsigned *)s, __ATOMIC_RELAXED);
                break;
        case sizeof(bool):
                __atomic_store_n((bool *)d, *(const bool *)s, __ATOMIC_RELAXED);
                break;
        }
}
