/* SPDX-License-Identifier: Apache-2.0 */
#include "cgroup-util.h"

#include "fd-util.h"
#include "macros.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "time-util.h"

/* Refuses names that could climb out of a hierarchy root. */
static int name_ok(const char *name)
{
        if (!name || !*name || name[0] == '/')
                return 0;
        for (const char *p = name; *p;) {
                size_t len = strcspn(p, "/");
                if (len == 0 || (len == 1 && p[0] == '.') ||
                    (len == 2 && p[0] == '.' && p[1] == '.'))
                        return 0;
                p += len;
                if (*p)
                        p++;
        }
        return 1;
}

/* The cgroup and cgroup2 mounts, read from /proc/self/mountinfo once per process: they do not
 * change while it runs, and the table grows with every other mount (one per running sandbox
 * in sbxd), so reading it for each call made creates slower as sandboxes accumulated. */
#define MAX_HIERARCHIES 32
static struct {
        char *mnt[MAX_HIERARCHIES];
        int v2[MAX_HIERARCHIES];
        size_t n;
        int err;
} hier;
static pthread_once_t hier_once = PTHREAD_ONCE_INIT;

static void read_hierarchies(void)
{
        _cleanup_close_ int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                hier.err = -errno;
                return;
        }
        _cleanup_free_ char *buf = NULL;
        int r = read_all(fd, 64 * 1024 * 1024, &buf, NULL);
        if (r < 0) {
                hier.err = r;
                return;
        }
        for (char *line = buf, *next; line && *line && hier.n < MAX_HIERARCHIES; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                /* id parent maj:min root mountpoint opts... - fstype source superopts */
                char mnt[4096], fstype[32];
                const char *sep = strstr(line, " - ");
                if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1 ||
                    sscanf(sep + 3, "%31s", fstype) != 1)
                        continue;
                int v2 = strcmp(fstype, "cgroup2") == 0;
                if (!v2 && strcmp(fstype, "cgroup") != 0)
                        continue;
                if (strchr(mnt, '\\')) /* octal-escaped: not a path we made */
                        continue;
                if (!(hier.mnt[hier.n] = strdup(mnt))) {
                        hier.err = -ENOMEM;
                        return;
                }
                hier.v2[hier.n++] = v2;
        }
}

/* Calls fn(mountpoint, fstype_is_v2, userdata) for each cgroup/cgroup2 mount; stops at the
 * first fn returning != 0 and returns that. */
static int for_each_hierarchy(int (*fn)(const char *, int, void *), void *userdata)
{
        pthread_once(&hier_once, read_hierarchies);
        if (hier.err < 0)
                return hier.err;
        for (size_t i = 0; i < hier.n; i++) {
                int r = fn(hier.mnt[i], hier.v2[i], userdata);
                if (r != 0)
                        return r;
        }
        return 0;
}

static int find_v2(const char *mnt, int v2, void *userdata)
{
        if (!v2)
                return 0;
        char **ret = userdata;
        return (*ret = strdup(mnt)) ? 1 : -ENOMEM;
}

int cgroup_v2_path(const char *name, char **ret_path)
{
        if (!name_ok(name))
                return -EINVAL;
        _cleanup_free_ char *mnt = NULL;
        int r = for_each_hierarchy(find_v2, &mnt);
        if (r < 0)
                return r;
        if (!mnt)
                return -ENOENT;
        if (asprintf(ret_path, "%s/%s", mnt, name) < 0)
                return -ENOMEM;
        return 0;
}

static int knob_path(const char *name, const char *knob, char *buf, size_t size)
{
        _cleanup_free_ char *dir = NULL;
        int r = cgroup_v2_path(name, &dir);
        if (r < 0)
                return r;
        if ((size_t)snprintf(buf, size, "%s/%s", dir, knob) >= size)
                return -ENAMETOOLONG;
        return 0;
}

static int kill_listed(const char *procs)
{
        _cleanup_close_ int fd = open(procs, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        _cleanup_free_ char *buf = NULL;
        int r = read_all(fd, 16 * 1024 * 1024, &buf, NULL);
        if (r < 0)
                return r;
        for (char *p = buf, *end; *p; p = end) {
                long pid = strtol(p, &end, 10);
                if (end == p)
                        break;
                if (pid > 0)
                        (void)kill((pid_t)pid, SIGKILL);
        }
        return 0;
}

int cgroup_kill(const char *name)
{
        char path[4096];
        int r = knob_path(name, "cgroup.kill", path, sizeof(path));
        if (r < 0)
                return r;
        r = write_file(path, "1");
        if (r != -ENOENT)
                return r;
        /* No cgroup.kill: either the group is gone or the kernel predates 5.14. */
        if (knob_path(name, "", path, sizeof(path)) >= 0 && access(path, F_OK) < 0)
                return 0;
        char freeze[4096], procs[4096];
        (void)knob_path(name, "cgroup.freeze", freeze, sizeof(freeze));
        (void)knob_path(name, "cgroup.procs", procs, sizeof(procs));
        (void)write_file(freeze, "1");
        r = kill_listed(procs);
        (void)write_file(freeze, "0");
        return r;
}

int cgroup_wait_empty(const char *name, int timeout_ms)
{
        char path[4096];
        int r = knob_path(name, "cgroup.events", path, sizeof(path));
        if (r < 0)
                return r;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
        for (;;) {
                char buf[256];
                ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
                if (n < 0)
                        return errno == ENODEV ? 0 : -errno; /* group removed meanwhile */
                buf[n] = 0;
                if (strstr(buf, "populated 0"))
                        return 0;
                int wait = -1;
                if (deadline >= 0) {
                        long long left = deadline - now_ms();
                        if (left <= 0)
                                return -ETIMEDOUT;
                        wait = (int)MIN(left, 100);
                } else {
                        wait = 100;
                }
                /* cgroup.events raises POLLPRI on change; the 100 ms cap covers a missed edge. */
                struct pollfd p = {.fd = fd, .events = POLLPRI};
                if (poll(&p, 1, wait) < 0 && errno != EINTR)
                        return -errno;
        }
}

/* rmdir dir after its descendant cgroups (only directories can be removed in cgroupfs). */
static int remove_tree(const char *dir)
{
        DIR *d = opendir(dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int r = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_type != DT_DIR || strcmp(e->d_name, ".") == 0 ||
                    strcmp(e->d_name, "..") == 0)
                        continue;
                char sub[4096];
                if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >= sizeof(sub)) {
                        r = -ENAMETOOLONG;
                        continue;
                }
                int k = remove_tree(sub);
                if (k < 0 && r == 0)
                        r = k;
        }
        closedir(d);
        if (rmdir(dir) < 0 && errno != ENOENT && r == 0)
                r = -errno;
        return r;
}

struct remove_ctx {
        const char *name;
        int error; /* first failure; the other hierarchies are still tried */
};

static int remove_in(const char *mnt, int v2, void *userdata)
{
        struct remove_ctx *c = userdata;
        char dir[4096];
        (void)v2;
        int r = (size_t)snprintf(dir, sizeof(dir), "%s/%s", mnt, c->name) >= sizeof(dir)
                    ? -ENAMETOOLONG
                    : remove_tree(dir);
        if (r < 0 && c->error == 0)
                c->error = r;
        return 0;
}

int cgroup_remove(const char *name)
{
        if (!name_ok(name))
                return -EINVAL;
        struct remove_ctx c = {.name = name};
        int r = for_each_hierarchy(remove_in, &c);
        return r < 0 ? r : c.error;
}

int cgroup_destroy(const char *name, int timeout_ms)
{
        int r = cgroup_kill(name);
        if (r < 0 && r != -ENOENT)
                return r;
        r = cgroup_wait_empty(name, timeout_ms);
        if (r < 0 && r != -ENOENT)
                return r;
        return cgroup_remove(name);
}

struct parent_limits {
        const char *name;
        uint64_t memory, pids;
        int written;
};

/* Write val into dir/knob if that knob exists: 1 written, 0 absent, -errno. */
static int write_knob_if(const char *dir, const char *knob, uint64_t val)
{
        char path[4096], buf[32];
        snprintf(path, sizeof(path), "%s/%s", dir, knob);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        int n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)val);
        return write(fd, buf, (size_t)n) == n ? 1 : -errno;
}

static int limit_one(const char *mnt, int v2, void *userdata)
{
        struct parent_limits *l = userdata;
        char dir[4096];
        int r;
        if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", mnt, l->name) >= sizeof(dir))
                return -ENAMETOOLONG;
        if (v2) {
                /* Only where this hierarchy offers the controllers (pure v2, or a hybrid whose
                 * unified part has them); a hybrid's empty unified tree has no knobs. */
                char ctl[4096];
                snprintf(ctl, sizeof(ctl), "%s/cgroup.subtree_control", mnt);
                _cleanup_close_ int fd = open(ctl, O_WRONLY | O_CLOEXEC);
                if (fd >= 0) {
                        (void)!write(fd, "+memory", 7);
                        (void)!write(fd, "+pids", 5);
                }
        }
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        static const char *const mem_v1[] = {"memory.limit_in_bytes",
                                             "memory.memsw.limit_in_bytes"};
        if (v2) {
                if ((r = write_knob_if(dir, "memory.max", l->memory)) < 0)
                        return r;
                l->written += r;
        } else {
                /* memsw must stay >= the memory limit: raising it goes memsw first. */
                r = write_knob_if(dir, mem_v1[0], l->memory);
                if (r == -EINVAL && write_knob_if(dir, mem_v1[1], l->memory) >= 0)
                        r = write_knob_if(dir, mem_v1[0], l->memory);
                if (r < 0)
                        return r;
                l->written += r;
                if ((r = write_knob_if(dir, mem_v1[1], l->memory)) < 0)
                        return r;
                l->written += r;
        }
        if ((r = write_knob_if(dir, "pids.max", l->pids)) < 0)
                return r;
        l->written += r;
        return 0;
}

int cgroup_limit_parent(const char *name, uint64_t memory_bytes, uint64_t pids_max)
{
        if (!name_ok(name) || strchr(name, '/'))
                return -EINVAL;
        struct parent_limits l = {.name = name, .memory = memory_bytes, .pids = pids_max};
        int r = for_each_hierarchy(limit_one, &l);
        return r < 0 ? r : l.written;
}
