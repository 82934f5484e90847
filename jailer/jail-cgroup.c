/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-cgroup.h"

#include "fd-util.h"
#include "jail-error.h"
#include "macros.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"

struct hierarchy {
        const char *dir;  /* under CGROUP_ROOT; "" is the root itself (pure v2) */
        const char *ctrl; /* name in /proc/self/cgroup: a v1 controller, or "" for v2 */
        int required;
};

static const struct hierarchy hybrid[] = {
    {"memory", "memory", 1},   {"pids", "pids", 1},       {"cpu", "cpu", 1},
    {"cpuacct", "cpuacct", 0}, {"freezer", "freezer", 0}, {"unified", "", 0},
};

static int is_pure_v2(void)
{
        return access(CGROUP_ROOT "/cgroup.controllers", F_OK) == 0;
}

/* This process's current cgroup path in the hierarchy named by ctrl (see struct hierarchy),
 * from /proc/self/cgroup. */
static int current_cgroup(const char *ctrl, char **ret)
{
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = read_all(fd, 64 * 1024, &buf, NULL);
        if (r < 0)
                return r;
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                char *ctrls = strchr(line, ':');
                char *path = ctrls ? strchr(ctrls + 1, ':') : NULL;
                if (!path)
                        continue;
                *path++ = 0;
                ctrls++;
                int match = *ctrl ? 0 : *ctrls == 0;
                for (char *c = ctrls, *sav = NULL; *ctrl && (c = strtok_r(c, ",", &sav)); c = NULL)
                        match |= strcmp(c, ctrl) == 0;
                if (match)
                        return (*ret = strdup(path)) ? 0 : -ENOMEM;
        }
        return -ENOENT;
}

/* mkdir -p of every component of rel under base except the last, then mkdir of the last:
 * returns 1 if created, -EEXIST if the leaf already existed. */
static int mkdir_leaf(const char *base, const char *rel)
{
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s", base, rel) < 0)
                return -ENOMEM;
        for (char *s = p + strlen(base) + 1; (s = strchr(s, '/')); s++) {
                *s = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, 0755) < 0)
                return -errno;
        return 1;
}

static int write_knob(const char *dir, const char *knob, const char *fmt, ...) _printf_(3, 4);
static int write_knob(const char *dir, const char *knob, const char *fmt, ...)
{
        char path[4096], val[64];
        va_list ap;
        snprintf(path, sizeof(path), "%s/%s", dir, knob);
        va_start(ap, fmt);
        vsnprintf(val, sizeof(val), fmt, ap);
        va_end(ap);
        return write_file(path, val);
}

static int set_v1_limits(const char *ctrl, const char *dir, const struct sbx_jail_spec *s)
{
        int r = 0;
        if (strcmp(ctrl, "memory") == 0) {
                r = write_knob(dir, "memory.limit_in_bytes", "%" PRIu64, s->memory_bytes);
                /* memsw (memory+swap) exists only with swap accounting; set it equal so a
                 * sandbox cannot spill past its limit into swap. */
                if (r >= 0) {
                        r = write_knob(dir, "memory.memsw.limit_in_bytes", "%" PRIu64,
                                       s->memory_bytes);
                        if (r == -ENOENT)
                                r = 0;
                }
        } else if (strcmp(ctrl, "pids") == 0) {
                r = write_knob(dir, "pids.max", "%" PRIu64, s->pids_max);
        } else if (strcmp(ctrl, "cpu") == 0) {
                r = write_knob(dir, "cpu.cfs_period_us", "%" PRIu64, s->cpu_period_us);
                if (r >= 0)
                        r = write_knob(dir, "cpu.cfs_quota_us", "%" PRId64, s->cpu_quota_us);
        }
        return r;
}

static int set_v2_limits(const char *dir, const struct sbx_jail_spec *s)
{
        int r = write_knob(dir, "memory.max", "%" PRIu64, s->memory_bytes);
        if (r >= 0) {
                r = write_knob(dir, "memory.swap.max", "0");
                if (r == -ENOENT)
                        r = 0;
        }
        if (r >= 0)
                r = write_knob(dir, "pids.max", "%" PRIu64, s->pids_max);
        if (r >= 0 && s->cpu_quota_us < 0)
                r = write_knob(dir, "cpu.max", "max %" PRIu64, s->cpu_period_us);
        else if (r >= 0)
                r = write_knob(dir, "cpu.max", "%" PRId64 " %" PRIu64, s->cpu_quota_us,
                               s->cpu_period_us);
        return r;
}

/* Pure v2: enable the three controllers in the subtree_control of the root and of every
 * ancestor of the leaf (which must exist), so the leaf gets memory.max, pids.max, cpu.max. */
static int v2_enable_controllers(const char *rel)
{
        size_t len = 0; /* length of the prefix of rel: 0 is the root */
        for (;;) {
                char knob[4096];
                snprintf(knob, sizeof(knob), CGROUP_ROOT "/%.*s%scgroup.subtree_control", (int)len,
                         rel, len ? "/" : "");
                int r = write_file(knob, "+memory +pids +cpu");
                if (r < 0)
                        return r;
                const char *next = strchr(rel + len + (len ? 1 : 0), '/');
                if (!next) /* the leaf's own subtree stays empty */
                        return 0;
                len = (size_t)(next - rel);
        }
}

static int add_dir(struct jail_cgroup *cg, const char *base, const char *ctrl, const char *rel)
{
        if (cg->n >= JAIL_CGROUP_MAX_DIRS)
                return -E2BIG;
        _cleanup_free_ char *dir = NULL, *cur = NULL, *origin = NULL;
        if (asprintf(&dir, "%s/%s", base, rel) < 0)
                return -ENOMEM;
        if (current_cgroup(ctrl, &cur) >= 0 && asprintf(&origin, "%s%s", base, cur) < 0)
                return -ENOMEM;
        int r = mkdir_leaf(base, rel);
        if (r < 0)
                return jail_errorf(r, "mkdir cgroup %s/%s: %m", base, rel);
        cg->dirs[cg->n] = TAKE_PTR(dir);
        cg->origin[cg->n] = TAKE_PTR(origin);
        cg->created[cg->n] = 1;
        cg->n++;
        return 0;
}

static int create_hybrid(struct jail_cgroup *cg, const struct sbx_jail_spec *s)
{
        char seen[ELEMENTSOF(hybrid)][4096];
        size_t n_seen = 0;
        for (size_t i = 0; i < ELEMENTSOF(hybrid); i++) {
                char base[4096], real[4096];
                snprintf(base, sizeof(base), CGROUP_ROOT "/%s", hybrid[i].dir);
                if (!realpath(base, real)) {
                        if (hybrid[i].required)
                                return -errno;
                        continue;
                }
                /* cpu and cpuacct may be one co-mounted hierarchy behind two symlinks. */
                int dup = 0;
                for (size_t j = 0; j < n_seen; j++)
                        dup |= strcmp(seen[j], real) == 0;
                if (dup)
                        continue;
                snprintf(seen[n_seen++], sizeof(seen[0]), "%s", real);
                int r = add_dir(cg, real, hybrid[i].ctrl, s->cgroup);
                if (r < 0)
                        return r;
                if (*hybrid[i].ctrl &&
                    (r = set_v1_limits(hybrid[i].ctrl, cg->dirs[cg->n - 1], s)) < 0)
                        return r;
        }
        return 0;
}

int jail_cgroup_create(struct jail_cgroup *cg, const struct sbx_jail_spec *s)
{
        int r;
        if (is_pure_v2()) {
                r = add_dir(cg, CGROUP_ROOT, "", s->cgroup);
                if (r >= 0)
                        r = v2_enable_controllers(s->cgroup);
                if (r >= 0)
                        r = set_v2_limits(cg->dirs[0], s);
        } else {
                r = create_hybrid(cg, s);
        }
        if (r < 0) {
                (void)jail_cgroup_remove(cg);
                jail_cgroup_done(cg);
        }
        return r;
}

int jail_cgroup_attach(struct jail_cgroup *cg)
{
        char pid[32];
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        for (size_t i = 0; i < cg->n; i++) {
                char knob[4096];
                snprintf(knob, sizeof(knob), "%s/cgroup.procs", cg->dirs[i]);
                int r = write_file(knob, pid);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int leave(const char *dir, const char *origin)
{
        char pid[32], knob[4096];
        snprintf(pid, sizeof(pid), "%d", (int)getpid());
        if (origin) {
                snprintf(knob, sizeof(knob), "%s/cgroup.procs", origin);
                if (write_file(knob, pid) >= 0)
                        return 0;
        }
        /* Fall back to the hierarchy root: the dir minus its relative part is not known here,
         * so walk up until a cgroup.procs accepts us. */
        _cleanup_free_ char *p = strdup(dir);
        if (!p)
                return -ENOMEM;
        for (char *s; (s = strrchr(p, '/')) && s > p + strlen(CGROUP_ROOT);) {
                *s = 0;
                snprintf(knob, sizeof(knob), "%s/cgroup.procs", p);
                if (write_file(knob, pid) >= 0)
                        return 0;
        }
        return -EBUSY;
}

int jail_cgroup_remove(struct jail_cgroup *cg)
{
        int ret = 0;
        for (size_t i = cg->n; i-- > 0;) {
                if (!cg->created[i])
                        continue;
                (void)leave(cg->dirs[i], cg->origin[i]);
                if (rmdir(cg->dirs[i]) < 0 && errno != ENOENT && ret == 0)
                        ret = -errno;
                else
                        cg->created[i] = 0;
        }
        return ret;
}

void jail_cgroup_done(struct jail_cgroup *cg)
{
        for (size_t i = 0; i < cg->n; i++) {
                free(cg->dirs[i]);
                free(cg->origin[i]);
        }
        *cg = (struct jail_cgroup){0};
}
