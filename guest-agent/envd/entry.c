/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/entry.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "core/path.h"
#include "macros.h"

#define IDMAP_FILE_MAX (1u * 1024u * 1024u)
#define IDMAP_MAX      4096u

static void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

struct idmap_entry {
        unsigned id;
        char *name;
};

struct agent_idmap {
        struct idmap_entry users[IDMAP_MAX];
        struct idmap_entry groups[IDMAP_MAX];
        size_t n_users, n_groups;
};

/* "name:x:id:..." lines of a passwd/group file: the first IDMAP_MAX entries. */
static void idmap_parse(const char *file, struct idmap_entry *tab, size_t *n)
{
        _cleanup_fclose_ FILE *f = fopen(file, "re");
        char line[1024];
        size_t total = 0;

        if (!f)
                return;
        while (*n < IDMAP_MAX && fgets(line, sizeof(line), f)) {
                char *name = line, *c1, *c2, *end;
                unsigned long id;

                total += strlen(line);
                if (total > IDMAP_FILE_MAX)
                        break;
                if (!(c1 = strchr(line, ':')) || !(c2 = strchr(c1 + 1, ':')))
                        continue;
                *c1 = 0;
                errno = 0;
                id = strtoul(c2 + 1, &end, 10);
                if (errno || end == c2 + 1 || *end != ':' || id > UINT_MAX || !*name)
                        continue;
                tab[*n].id = (unsigned)id;
                tab[*n].name = strdup(name);
                if (tab[*n].name)
                        (*n)++;
        }
}

int agent_idmap_load(struct agent_idmap **ret)
{
        struct agent_idmap *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        idmap_parse("/etc/passwd", m->users, &m->n_users);
        idmap_parse("/etc/group", m->groups, &m->n_groups);
        *ret = m;
        return 0;
}

void agent_idmap_free(struct agent_idmap *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < m->n_users; i++)
                free(m->users[i].name);
        for (size_t i = 0; i < m->n_groups; i++)
                free(m->groups[i].name);
        free(m);
}

static const char *idmap_name(const struct idmap_entry *tab, size_t n, unsigned id, char buf[16])
{
        for (size_t i = 0; i < n; i++)
                if (tab[i].id == id)
                        return tab[i].name;
        snprintf(buf, 16, "%u", id);
        return buf;
}

const char *agent_mode_string(mode_t mode, char buf[static 16])
{
        /* Go's order of type letters: d a l T L D p S u g c t ?. */
        static const char rwx[] = "rwxrwxrwx";
        size_t o = 0;

        if (S_ISDIR(mode))
                buf[o++] = 'd';
        if (S_ISLNK(mode))
                buf[o++] = 'L';
        if (S_ISBLK(mode) || S_ISCHR(mode))
                buf[o++] = 'D';
        if (S_ISFIFO(mode))
                buf[o++] = 'p';
        if (S_ISSOCK(mode))
                buf[o++] = 'S';
        if (mode & S_ISUID)
                buf[o++] = 'u';
        if (mode & S_ISGID)
                buf[o++] = 'g';
        if (S_ISCHR(mode))
                buf[o++] = 'c';
        if (mode & S_ISVTX)
                buf[o++] = 't';
        if (o == 0)
                buf[o++] = '-';
        for (int i = 0; i < 9; i++)
                buf[o++] = (mode & (1u << (8 - i))) ? rwx[i] : '-';
        buf[o] = 0;
        return buf;
}

const char *agent_timestamp(const struct timespec *ts, char buf[static 40])
{
        struct tm tm;
        size_t o;
        long ns = ts->tv_nsec;

        gmtime_r(&ts->tv_sec, &tm);
        o = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
        if (ns == 0)
                snprintf(buf + o, 40 - o, "Z");
        else if (ns % 1000000 == 0)
                snprintf(buf + o, 40 - o, ".%03ldZ", ns / 1000000);
        else if (ns % 1000 == 0)
                snprintf(buf + o, 40 - o, ".%06ldZ", ns / 1000);
        else
                snprintf(buf + o, 40 - o, ".%09ldZ", ns);
        return buf;
}

int agent_entry_metadata(const char *path, cJSON **ret)
{
        _cleanup_free_ char *names = malloc(64 * 1024);
        cJSON *obj = NULL;
        ssize_t n;

        *ret = NULL;
        if (!names)
                return -ENOMEM;
        n = llistxattr(path, names, 64 * 1024);
        if (n <= 0)
                return 0;
        for (char *p = names; p < names + n; p += strlen(p) + 1) {
                char val[AGENT_METADATA_TOTAL_MAX + 1];
                ssize_t vl;

                if (strncmp(p, AGENT_XATTR_PREFIX, strlen(AGENT_XATTR_PREFIX)) != 0)
                        continue;
                vl = lgetxattr(path, p, val, sizeof(val) - 1);
                if (vl < 0)
                        continue;
                val[vl] = 0;
                if (!obj && !(obj = cJSON_CreateObject()))
                        return -ENOMEM;
                if (!cJSON_AddStringToObject(obj, p + strlen(AGENT_XATTR_PREFIX), val)) {
                        cJSON_Delete(obj);
                        return -ENOMEM;
                }
        }
        *ret = obj;
        return 0;
}

/* Regular files and directories; every other type leaves it unset (FILE_TYPE_UNSPECIFIED, the
 * default value, is omitted). envd 0.6.13 never reports FILE_TYPE_SYMLINK: a symlink gets the
 * type of what it points to. */
static const char *file_type(mode_t m)
{
        if (S_ISREG(m))
                return "FILE_TYPE_FILE";
        if (S_ISDIR(m))
                return "FILE_TYPE_DIRECTORY";
        return NULL;
}

/*
 * A symlink as envd 0.6.13 reports it (GetEntryInfo, e2b-dev/infra): symlinkTarget is the
 * fully resolved path (EvalSymlinks), or the link's own path when that fails (dangling, loop);
 * type and mode are those of the target (stat), nothing when it cannot be stat-ed; name, size,
 * permissions ("Lrwxrwxrwx"), owner, group and time are the link's own (lstat); metadata is the
 * target's (xattrs are read through the link).
 */
static int symlink_target(const char *path, struct stat *ret_target, bool *ret_ok,
                          char **ret_resolved)
{
        char *t = realpath(path, NULL);

        if (!t && errno == ENOMEM)
                return -ENOMEM;
        if (!t && !(t = strdup(path)))
                return -ENOMEM;
        *ret_ok = stat(path, ret_target) == 0;
        *ret_resolved = t;
        return 0;
}

int agent_entry_info(const char *path, const struct stat *st, const struct agent_idmap *ids,
                     cJSON **ret)
{
        char modebuf[16], tsbuf[40], sizebuf[32], ubuf[16], gbuf[16];
        _cleanup_free_ char *target = NULL;
        const char *type;
        struct stat sb, tst;
        bool link = false, target_ok = false;
        mode_t perm;
        cJSON *o, *meta = NULL;

        if (!st) {
                if (lstat(path, &sb) < 0)
                        return negative_errno();
                st = &sb;
        }
        if (S_ISLNK(st->st_mode)) {
                link = true;
                if (symlink_target(path, &tst, &target_ok, &target) < 0)
                        return -ENOMEM;
        }
        type = !link ? file_type(st->st_mode) : target_ok ? file_type(tst.st_mode) : NULL;
        perm = !link ? st->st_mode & 0777 : target_ok ? tst.st_mode & 0777 : 0;
        if (!(o = cJSON_CreateObject()))
                return -ENOMEM;
        snprintf(sizebuf, sizeof(sizebuf), "%lld", (long long)st->st_size);
        if (!cJSON_AddStringToObject(o, "name", agent_path_basename(path)) ||
            (type && !cJSON_AddStringToObject(o, "type", type)) ||
            !cJSON_AddStringToObject(o, "path", path) ||
            (st->st_size && !cJSON_AddStringToObject(o, "size", sizebuf)) ||
            (perm && !cJSON_AddNumberToObject(o, "mode", perm)) ||
            !cJSON_AddStringToObject(o, "permissions", agent_mode_string(st->st_mode, modebuf)) ||
            !cJSON_AddStringToObject(o, "owner",
                                     ids ? idmap_name(ids->users, ids->n_users, st->st_uid, ubuf)
                                         : (snprintf(ubuf, 16, "%u", st->st_uid), ubuf)) ||
            !cJSON_AddStringToObject(o, "group",
                                     ids ? idmap_name(ids->groups, ids->n_groups, st->st_gid, gbuf)
                                         : (snprintf(gbuf, 16, "%u", st->st_gid), gbuf)) ||
            !cJSON_AddStringToObject(o, "modifiedTime", agent_timestamp(&st->st_mtim, tsbuf)) ||
            (link && !cJSON_AddStringToObject(o, "symlinkTarget", target)))
                goto oom;
        if (agent_entry_metadata(link && target_ok ? target : path, &meta) < 0)
                goto oom;
        if (meta && !cJSON_AddItemToObject(o, "metadata", meta)) {
                cJSON_Delete(meta);
                goto oom;
        }
        *ret = o;
        return 0;
oom:
        cJSON_Delete(o);
        return -ENOMEM;
}
