/* SPDX-License-Identifier: Apache-2.0 */
#include "core/fs-check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "missing-syscalls.h"

/* Whether pid is the agent or one of its threads. */
static bool own_pid(unsigned long pid)
{
        char task[64];
        struct stat st;

        if (pid == (unsigned long)getpid())
                return true;
        snprintf(task, sizeof(task), "/proc/self/task/%lu", pid);
        return stat(task, &st) == 0;
}

int agent_fs_check_fd(int fd)
{
        char link[64], target[PATH_MAX];
        unsigned long pid;
        struct statfs sfs;
        const char *p;
        char *end;
        ssize_t n;

        if (fstatfs(fd, &sfs) < 0)
                return negative_errno();
        if (sfs.f_type != PROC_SUPER_MAGIC)
                return 0;
        /* Where in /proc: the kernel's own name for the fd's path. */
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, target, sizeof(target) - 1);
        if (n < 0)
                return negative_errno();
        target[n] = '\0';
        if (strcmp(target, "/proc") == 0)
                return 0;
        if (strncmp(target, "/proc/", 6) != 0)
                return -EACCES; /* procfs elsewhere than /proc: not the agent's to judge */
        p = target + 6;
        if (*p < '0' || *p > '9')
                return 0; /* /proc/cpuinfo, /proc/sys/…: the same for every process */
        errno = 0;
        pid = strtoul(p, &end, 10);
        if (errno || (*end != '/' && *end != '\0'))
                return 0;
        return own_pid(pid) ? -EACCES : 0;
}

int agent_fs_check_path(const char *path, bool follow)
{
        struct open_how how = {
            .flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW),
            .resolve = RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_close_ int fd = openat2(AT_FDCWD, path, &how, sizeof(how));

        if (fd < 0)
                return negative_errno();
        return agent_fs_check_fd(fd);
}
