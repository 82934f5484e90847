/* SPDX-License-Identifier: Apache-2.0 */
/* The config file (/etc/sbx/sbxd.conf in the package): reading it, and reading it again. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/server-config.h"
#include "fd-util.h"
#include "log.h"
#include "macros.h"

/* The largest config file read, and the most mistakes reported from one. */
#define CONFIG_FILE_MAX    (1024 * 1024)
#define CONFIG_MAX_REPORTS 20

/* s without the spaces and tabs at both ends (in place). */
static char *trim(char *s)
{
        s += strspn(s, " \t");
        size_t l = strlen(s);
        while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r'))
                s[--l] = 0;
        return s;
}

/* One "NAME = VALUE" line. 0, or -EINVAL with the message in err. */
static int read_line(char *line, struct sbxd_config *c, unsigned lineno, unsigned *first_line,
                     char *err, size_t errlen)
{
        char *eq = strchr(line, '=');
        if (!eq) {
                snprintf(err, errlen, "expected NAME = VALUE");
                return -EINVAL;
        }
        *eq = 0;
        char *name = trim(line), *value = trim(eq + 1);
        size_t vl = strlen(value);
        if (vl >= 2 && value[0] == '"' && value[vl - 1] == '"') { /* a quoted value */
                value[vl - 1] = 0;
                value++;
        }
        const struct sbxd_option *o = option_find(name[0] == '-' ? name + strspn(name, "-") : name);
        if (!o) {
                snprintf(err, errlen, "unknown option '%s'", name);
                return -EINVAL;
        }
        if (name[0] == '-') {
                snprintf(err, errlen, "'%s': write the option's name without dashes", name);
                return -EINVAL;
        }
        if (o->kind == OPTION_COMMAND) {
                snprintf(err, errlen, "'%s' is a command-line option only", name);
                return -EINVAL;
        }
        size_t i = option_index(o);
        if (first_line[i] && o->kind != OPTION_LIST) { /* a list takes a line per value */
                snprintf(err, errlen, "'%s' is set again (first on line %u)", name, first_line[i]);
                return -EINVAL;
        }
        char why[512];
        int r = option_set(o, c, value, true, why, sizeof(why));
        if (r < 0) {
                snprintf(err, errlen, "%s: %s", name, why);
                return r;
        }
        first_line[i] = lineno;
        c->given[i] = ORIGIN_FILE;
        return 0;
}

int config_read_file(const char *path, struct sbxd_config *c)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t len;
        int r = fd < 0 ? -errno : fstat(fd, &st) < 0 ? -errno : 0;
        if (r >= 0 && !S_ISREG(st.st_mode))
                r = -EINVAL;
        if (r >= 0)
                r = read_all(fd, CONFIG_FILE_MAX, &buf, &len);
        if (r < 0) {
                config_error("%s: %s", path,
                             r == -EINVAL  ? "not a regular file"
                             : r == -EFBIG ? "larger than 1 MiB"
                                           : strerror(-r));
                return r;
        }
        if (memchr(buf, 0, len)) {
                config_error("%s: not a text file (it holds a NUL byte)", path);
                return -EINVAL;
        }
        unsigned first_line[OPTION_MAX_ROWS] = {}, lineno = 0, errors = 0;
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                lineno++;
                char *t = trim(line), err[1024];
                if (!*t || *t == '#')
                        continue;
                r = -EINVAL;
                if (strlen(t) >= OPTION_MAX_LINE)
                        snprintf(err, sizeof(err), "line longer than %d bytes",
                                 OPTION_MAX_LINE - 1);
                else
                        r = read_line(t, c, lineno, first_line, err, sizeof(err));
                if (r < 0 && ++errors <= CONFIG_MAX_REPORTS)
                        config_error("%s:%u: %s", path, lineno, err);
        }
        return errors ? -EINVAL : 0;
}

/* A second configuration read as the first was: the same file, the same command line. */
static int copy_sources(const struct sbxd_config *live, struct sbxd_config *next)
{
        if (live->config_file && !(next->config_file = strdup(live->config_file)))
                return -ENOMEM;
        if (live->n_args && !(next->args = calloc(live->n_args, sizeof(*next->args))))
                return -ENOMEM;
        for (size_t i = 0; i < live->n_args; i++) {
                next->args[i].option = live->args[i].option;
                if (!(next->args[i].value = strdup(live->args[i].value)))
                        return -ENOMEM;
                next->n_args++;
        }
        return 0;
}

int config_reload(struct sbxd_config *live,
                  void (*changed)(const struct sbxd_option *o, const char *old_value,
                                  const char *new_value, bool applied, void *userdata),
                  void *userdata)
{
        _cleanup_(config_done) struct sbxd_config next = {};
        int r = copy_sources(live, &next);
        if (r < 0)
                return r;
        config_errors_to_log(true);
        r = config_load(&next);
        config_errors_to_log(false);
        if (r < 0)
                return r;
        /* what the start found and the defaults derive from (the storage pool's size) */
        next.pool_fs_bytes = live->pool_fs_bytes;
        r = config_derive_limits(&next);
        if (r < 0)
                return log_error_errno(r, "reload: reading the host's limits: %m");
        for (size_t i = 0; i < sbxd_n_options; i++) {
                const struct sbxd_option *o = &sbxd_options[i];
                char before[OPTION_MAX_LINE], after[OPTION_MAX_LINE];
                if (o->kind == OPTION_SECTION || o->kind == OPTION_COMMAND)
                        continue;
                option_format(o, live, before, sizeof(before));
                option_format(o, &next, after, sizeof(after));
                if (strcmp(before, after) == 0)
                        continue;
                if (o->reload) {
                        option_copy_scalar(o, live, &next);
                        live->given[i] = next.given[i];
                }
                changed(o, before, after, o->reload, userdata);
        }
        return 0;
}
