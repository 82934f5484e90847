/* SPDX-License-Identifier: Apache-2.0 */
#include "cgroup-freeze.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "fd-util.h"
#include "macros.h"
#include "time-util.h"

#define V1_ROOT "/sys/fs/cgroup"

/* Read a small file of dir/name into buf; -errno on failure. */
static int read_knob(const char *dir, const char *name, char *buf, size_t size)
{
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
                return -ENAMETOOLONG;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        ssize_t n = pread(fd, buf, size - 1, 0);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        return 0;
}

/* Value after "key " in a "key value" per-line file; 0 when absent. */
static uint64_t keyed(const char *text, const char *key)
{
        size_t kl = strlen(key);
        for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
                if (strncmp(p, key, kl) == 0 && p[kl] == ' ')
                        return strtoull(p + kl + 1, NULL, 10);
        return 0;
}

static int events_frozen(const char *dir)
{
        char buf[512];
        int r = read_knob(dir, "cgroup.events", buf, sizeof(buf));
        if (r < 0)
                return r;
        return keyed(buf, "frozen") ? 1 : 0;
}

int cgroup_freeze(const char *name, bool freeze, int timeout_ms)
{
        _cleanup_free_ char *dir = NULL;
        char path[4096];
        int r = cgroup_v2_path(name, &dir);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/cgroup.freeze", dir);
        r = write_file(path, freeze ? "1" : "0");
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/cgroup.events", dir);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int64_t deadline = now_ms() + timeout_ms;
        for (;;) {
                r = events_frozen(dir);
                if (r < 0)
                        return r;
                if (r == (freeze ? 1 : 0))
                        return 0;
                int64_t left = deadline - now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                char c[512];
                if (pread(fd, c, sizeof(c), 0) < 0)
                        return -errno;
                /* cgroup.events raises POLLPRI on change; re-check at least every 10 ms */
                struct pollfd p = {.fd = fd, .events = POLLPRI};
                poll(&p, 1, (int)MIN(left, 10));
        }
}

int cgroup_is_frozen(const char *name)
{
        _cleanup_free_ char *dir = NULL;
        char buf[16];
        int r = cgroup_v2_path(name, &dir);
        if (r >= 0)
                r = read_knob(dir, "cgroup.freeze", buf, sizeof(buf));
        if (r < 0)
                return r;
        return buf[0] == '1';
}

static void read_v1(const char *name, struct cgroup_stats *st)
{
        char dir[4096], buf[4096];
        snprintf(dir, sizeof(dir), V1_ROOT "/cpuacct/%s", name);
        if (read_knob(dir, "cpuacct.usage", buf, sizeof(buf)) >= 0)
                st->cpu_usage_ns = strtoull(buf, NULL, 10);
        snprintf(dir, sizeof(dir), V1_ROOT "/memory/%s", name);
        if (read_knob(dir, "memory.usage_in_bytes", buf, sizeof(buf)) >= 0)
                st->mem_usage = strtoull(buf, NULL, 10);
        if (read_knob(dir, "memory.limit_in_bytes", buf, sizeof(buf)) >= 0)
                st->mem_limit = strtoull(buf, NULL, 10);
        if (read_knob(dir, "memory.stat", buf, sizeof(buf)) >= 0)
                st->mem_cache = keyed(buf, "total_cache");
        if (read_knob(dir, "memory.oom_control", buf, sizeof(buf)) >= 0)
                st->oom_kills = keyed(buf, "oom_kill");
}

static void read_v2(const char *dir, struct cgroup_stats *st)
{
        char buf[8192];
        if (!st->cpu_usage_ns && read_knob(dir, "cpu.stat", buf, sizeof(buf)) >= 0)
                st->cpu_usage_ns = keyed(buf, "usage_usec") * 1000;
        if (!st->mem_usage && read_knob(dir, "memory.current", buf, sizeof(buf)) >= 0)
                st->mem_usage = strtoull(buf, NULL, 10);
        if (!st->mem_limit && read_knob(dir, "memory.max", buf, sizeof(buf)) >= 0)
                st->mem_limit = strtoull(buf, NULL, 10);
        if (!st->mem_cache && read_knob(dir, "memory.stat", buf, sizeof(buf)) >= 0)
                st->mem_cache = keyed(buf, "file");
        if (!st->oom_kills && read_knob(dir, "memory.events", buf, sizeof(buf)) >= 0)
                st->oom_kills = keyed(buf, "oom_kill");
}

int cgroup_read_stats(const char *name, struct cgroup_stats *ret)
{
        struct cgroup_stats st = {};
        _cleanup_free_ char *dir = NULL;
        int r = cgroup_v2_path(name, &dir);
        if (r < 0)
                return r;
        struct stat sb;
        if (stat(dir, &sb) < 0)
                return -errno;
        read_v1(name, &st);
        read_v2(dir, &st);
        *ret = st;
        return 0;
}
