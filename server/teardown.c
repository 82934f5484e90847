/* SPDX-License-Identifier: Apache-2.0 */
#include "teardown.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "missing-syscalls.h"
#include <sys/pidfd.h>

#define TEARDOWN_WAIT_MS 5000

static void sleep_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
}

/* Whether the cgroup dir still has processes. v2: cgroup.events; v1: cgroup.procs. */
static bool cgroup_populated(const char *cg, bool v2)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", cg, v2 ? "cgroup.events" : "cgroup.procs");
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        _cleanup_free_ char *buf = NULL;
        size_t len;
        if (read_all(fd, 1 << 20, &buf, &len) < 0)
                return false;
        if (v2)
                return strstr(buf, "populated 1") != NULL;
        return len > 0;
}

/* SIGKILL every pid listed in a v1 cgroup.procs (recursively for child cgroups). */
static void cgroup_v1_kill(const char *cg)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                _cleanup_free_ char *buf = NULL;
                size_t len;
                if (read_all(fd, 1 << 20, &buf, &len) >= 0)
                        for (char *p = buf, *e; *p; p = e) {
                                long pid = strtol(p, &e, 10);
                                if (e == p)
                                        break;
                                if (pid > 1)
                                        kill((pid_t)pid, SIGKILL);
                        }
        }
        DIR *d = opendir(cg);
        if (!d)
                return;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        snprintf(path, sizeof(path), "%s/%s", cg, de->d_name);
                        cgroup_v1_kill(path);
                }
        closedir(d);
}

/* rmdir a cgroup and its child cgroups, deepest first; retried while processes exit. */
static int cgroup_rmdir(const char *cg)
{
        DIR *d = opendir(cg);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        struct dirent *de;
        char path[4096];
        int ret = 0;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        snprintf(path, sizeof(path), "%s/%s", cg, de->d_name);
                        int r = cgroup_rmdir(path);
                        if (r < 0 && ret == 0)
                                ret = r;
                }
        closedir(d);
        for (int i = 0; i < 100; i++) {
                if (rmdir(cg) == 0 || errno == ENOENT)
                        return ret;
                if (errno != EBUSY)
                        break;
                sleep_ms(20);
        }
        return ret ? ret : -errno;
}

/* Every hierarchy under /sys/fs/cgroup that has sbx/<id>: the v2 mount and each v1 one. */
static int for_each_cgroup(const char *id, int (*fn)(const char *cg, bool v2, void *u), void *u)
{
        DIR *d = opendir(CGROUP_ROOT);
        int ret = 0;
        if (!d)
                return -errno;
        struct dirent *de;
        while ((de = readdir(d))) {
                char cg[512];
                struct stat st;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(cg, sizeof(cg), "%s/%s/%s/%s", CGROUP_ROOT, de->d_name, CGROUP_PARENT, id);
                if (lstat(cg, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                int r = fn(cg, strcmp(de->d_name, "unified") == 0, u);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        closedir(d);
        /* cgroup2 mounted directly on /sys/fs/cgroup (pure v2 hosts) */
        char cg[512];
        struct stat st;
        snprintf(cg, sizeof(cg), "%s/%s/%s", CGROUP_ROOT, CGROUP_PARENT, id);
        if (lstat(cg, &st) == 0 && S_ISDIR(st.st_mode)) {
                int r = fn(cg, true, u);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

static int kill_one(const char *cg, bool v2, void *u)
{
        char path[4096];
        if (v2) {
                snprintf(path, sizeof(path), "%s/cgroup.kill", cg);
                if (write_file(path, "1") >= 0)
                        return 0;
        }
        cgroup_v1_kill(cg);
        return 0;
}

static int populated_one(const char *cg, bool v2, void *u)
{
        if (cgroup_populated(cg, v2)) {
                if (!v2)
                        cgroup_v1_kill(cg);
                *(bool *)u = true;
        }
        return 0;
}

static int rmdir_one(const char *cg, bool v2, void *u)
{
        return cgroup_rmdir(cg);
}

static int rm_rf_children(int dfd, dev_t dev)
{
        _cleanup_close_ int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (dup < 0)
                return -errno;
        DIR *d = fdopendir(dup);
        if (!d)
                return -errno;
        TAKE_FD(dup);
        int ret = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                struct stat st;
                if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        if (st.st_dev != dev) {
                                /* a mount point: never descend, leave it (reported) */
                                ret = ret ? ret : -EBUSY;
                                continue;
                        }
                        _cleanup_close_ int sub = openat(
                            dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0) {
                                int r = rm_rf_children(sub, dev);
                                if (r < 0 && !ret)
                                        ret = r;
                        }
                        if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) < 0 && !ret)
                                ret = -errno;
                } else if (unlinkat(dfd, de->d_name, 0) < 0 && errno != ENOENT && !ret) {
                        ret = -errno;
                }
        }
        closedir(d);
        return ret;
}

int rm_rf(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno == ENOTDIR || errno == ELOOP)
                        return unlink(path) < 0 ? -errno : 0;
                return -errno;
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        int r = rm_rf_children(fd, st.st_dev);
        if (rmdir(path) < 0 && r == 0)
                r = -errno;
        return r;
}

int teardown_sandbox(const char *id, pid_t pid, int pidfd, const char *dir)
{
        int ret = 0, r;

        /* 1. kill */
        if (pidfd >= 0)
                pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
        else if (pid > 1)
                kill(pid, SIGKILL);
        for_each_cgroup(id, kill_one, NULL);

        /* 2. wait until the agent is gone and the cgroups are empty */
        if (pidfd >= 0) {
                struct pollfd p = {.fd = pidfd, .events = POLLIN};
                if (poll(&p, 1, TEARDOWN_WAIT_MS) == 0)
                        ret = -ETIMEDOUT;
        }
        for (int waited = 0;; waited += 10) {
                bool busy = false;
                for_each_cgroup(id, populated_one, &busy);
                if (!busy)
                        break;
                if (waited >= TEARDOWN_WAIT_MS) {
                        ret = -ETIMEDOUT;
                        break;
                }
                sleep_ms(10);
        }

        /* 3. cgroups */
        r = for_each_cgroup(id, rmdir_one, NULL);
        if (r < 0 && ret == 0)
                ret = r;

        /* 4. files */
        if (dir) {
                r = rm_rf(dir);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}
