/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-ucount.h"

#include "fd-util.h"
#include "jail-error.h"
#include "macros.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <linux/securebits.h>
#include <unistd.h>

#define USER_SYSCTL "/proc/sys/user/"

/* Nothing inside creates one: seccomp refuses unshare, setns and clone with CLONE_NEW*, and
 * every kind but the user namespace also needs CAP_SYS_ADMIN, which nothing inside has. The
 * limit holds past both. Mount namespaces are left out: the child's own pivot makes one more
 * (open_tree(OPEN_TREE_CLONE) is an anonymous mount namespace) after this step. fanotify_init
 * is refused by seccomp as well. */
static const char *const zero_limits[] = {
    "max_user_namespaces", "max_pid_namespaces",  "max_uts_namespaces",
    "max_ipc_namespaces",  "max_net_namespaces",  "max_cgroup_namespaces",
    "max_time_namespaces", "max_fanotify_groups", "max_fanotify_marks",
};

static int read_long(const char *path, long *ret)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *buf = NULL;
        char *end;
        if (fd < 0)
                return -errno;
        int r = read_all(fd, 64, &buf, NULL);
        if (r < 0)
                return r;
        errno = 0;
        long v = strtol(buf, &end, 10);
        if (errno || end == buf || v < 0)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* host is at most INT_MAX (the sysctl's bound): no overflow in a long long. */
static long uid_share(long host)
{
        long long v = (long long)host * JAIL_UCOUNT_UID_SHARE_NUM / JAIL_UCOUNT_UID_SHARE_DEN;
        return v < 1 ? 1 : (long)v;
}

int jail_ucount_plan(struct jail_ucount *u)
{
        long inst, watches;
        int r = read_long(USER_SYSCTL "max_inotify_instances", &inst);
        if (r >= 0)
                r = read_long(USER_SYSCTL "max_inotify_watches", &watches);
        if (r < 0)
                return jail_errorf(r, "read " USER_SYSCTL "max_inotify_*: %m");
        u->inotify_instances = uid_share(inst);
        u->inotify_watches = uid_share(watches);
        return 0;
}

int jail_ucount_owner_enter(uid_t id, int *ret_saved_securebits)
{
        int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
        if (bits < 0)
                return jail_errorf(-errno, "PR_GET_SECUREBITS: %m");
        /* Keep the capabilities across the euid change: some kernels refuse user namespaces to
         * creators without CAP_SYS_ADMIN (Debian's unprivileged_userns_clone, LSM policies). */
        if (prctl(PR_SET_SECUREBITS, (unsigned long)(bits | SECBIT_NO_SETUID_FIXUP), 0, 0, 0) < 0)
                return jail_errorf(-errno, "PR_SET_SECUREBITS: %m");
        if (setresgid((gid_t)-1, (gid_t)id, (gid_t)-1) < 0 ||
            setresuid((uid_t)-1, id, (uid_t)-1) < 0) {
                int r = -errno;
                (void)jail_ucount_owner_leave(bits);
                return jail_errorf(r, "effective ids %u: %m", (unsigned)id);
        }
        *ret_saved_securebits = bits;
        return 0;
}

int jail_ucount_owner_leave(int saved_securebits)
{
        /* uid 0 is still the real and saved uid: going back needs no privilege. */
        if (setresuid((uid_t)-1, 0, (uid_t)-1) < 0 || setresgid((gid_t)-1, 0, (gid_t)-1) < 0)
                return jail_errorf(-errno, "effective ids back to 0: %m");
        if (prctl(PR_SET_SECUREBITS, (unsigned long)saved_securebits, 0, 0, 0) < 0)
                return jail_errorf(-errno, "PR_SET_SECUREBITS: %m");
        return 0;
}

static int write_limit(int dir_fd, const char *name, long value)
{
        char v[32];
        int n = snprintf(v, sizeof(v), "%ld\n", value);
        _cleanup_close_ int fd = openat(dir_fd, name, O_WRONLY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) /* older kernel: no such counter */
                return 0;
        int r = fd < 0 ? -errno : write_full(fd, v, (size_t)n);
        return r < 0 ? jail_errorf(r, "write " USER_SYSCTL "%s: %m", name) : 0;
}

int jail_ucount_limit(const struct jail_ucount *u)
{
        _cleanup_close_ int dir = open(USER_SYSCTL, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r;
        if (dir < 0)
                return jail_errorf(-errno, "open " USER_SYSCTL ": %m");
        for (size_t i = 0; i < ELEMENTSOF(zero_limits); i++)
                if ((r = write_limit(dir, zero_limits[i], 0)) < 0)
                        return r;
        if ((r = write_limit(dir, "max_inotify_instances", u->inotify_instances)) < 0 ||
            (r = write_limit(dir, "max_inotify_watches", u->inotify_watches)) < 0)
                return r;
        return 0;
}
