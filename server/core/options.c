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
        if (o->kind == OPTION_PATH && value[0] != '/') {
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
