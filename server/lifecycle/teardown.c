/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/teardown.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "storage/disk-image.h"
#include "fd-util.h"
#include "macros.h"
#include "missing-syscalls.h"
#include <sys/pidfd.h>

static const char *parent_name = CGROUP_PARENT_DEFAULT;

const char *cgroup_parent(void)
{
        return parent_name;
}

void cgroup_parent_set(const char *name)
{
        parent_name = name;
}

#define TEARDOWN_WAIT_MS 5000

static void sleep_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
}

/* The tmpfs upper the jailer mounted at <dir>/rootfs on the host (jailer spec
 * upper_on_host). MNT_DETACH: a host process with a cwd in it must not keep sbxd waiting. */
static int umount_upper(const char *dir)
{
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/rootfs", dir) >= sizeof(path))
                return -ENAMETOOLONG;
        /* UMOUNT_NOFOLLOW: rootfs is sbxd's own dir, but never follow a link there anyway */
        for (int i = 0; i < 4; i++) /* stacked mounts, should there ever be several */
                if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                        return errno == EINVAL || errno == ENOENT ? 0 : -errno;
        return 0;
}

/* An id names one sandbox's cgroup and dir: never the parent (an empty id), never a path. */
static bool id_ok(const char *id)
{
        return id && *id && !strchr(id, '/') && strcmp(id, ".") != 0 && strcmp(id, "..") != 0;
}

int teardown_processes(const char *id, pid_t pid, int pidfd, const char *dir)
{
        char cg[128];
        int ret = 0, r;

        if (!id_ok(id))
                return -EINVAL;
        /* 1. the agent is PID 1 of the sandbox: killing it kills the pid namespace */
        if (pidfd >= 0)
                pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
        else if (pid > 1)
                kill(pid, SIGKILL);
        if (pidfd >= 0) {
                struct pollfd p = {.fd = pidfd, .events = POLLIN};
                if (poll(&p, 1, TEARDOWN_WAIT_MS) == 0)
                        ret = -ETIMEDOUT;
        }

        /* 2. + 3. cgroup.kill, wait for "populated 0", rmdir in every hierarchy */
        snprintf(cg, sizeof(cg), "%s/%s", CGROUP_PARENT, id);
        r = cgroup_destroy(cg, TEARDOWN_WAIT_MS);
        for (int i = 0; r == -EBUSY && i < 50; i++) {
                sleep_ms(20); /* v1 groups can lag behind the v2 one for a moment */
                r = cgroup_remove(cg);
        }
        if (r < 0 && ret == 0)
                ret = r;
        if (dir) {
                r = umount_upper(dir);
                if (r < 0 && ret == 0)
                        ret = r;
                /* its loop device goes with the unmount (autoclear); a persisted sandbox
                 * keeps its upper in the layer store, not here */
                r = disk_image_remove(dir);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

int teardown_sandbox(const char *id, pid_t pid, int pidfd, const char *dir)
{
        if (!id_ok(id))
                return -EINVAL; /* and nothing removed: its dir would be every sandbox's */
        int ret = teardown_processes(id, pid, pidfd, dir);
        /* 4. files */
        if (dir) {
                int r = rm_rf(dir);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}
