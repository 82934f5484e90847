/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "missing-syscalls.h"

/* Raw capget/capset act on the calling thread only (libcap may broadcast to every thread). */
struct thread_caps {
        struct __user_cap_header_struct head;
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
};

static int caps_get(struct thread_caps *c)
{
        c->head = (struct __user_cap_header_struct){.version = _LINUX_CAPABILITY_VERSION_3};
        return syscall(SYS_capget, &c->head, c->data) < 0 ? negative_errno() : 0;
}

static int caps_set(struct thread_caps *c)
{
        c->head.pid = 0;
        return syscall(SYS_capset, &c->head, c->data) < 0 ? negative_errno() : 0;
}

/* CAP_DAC_OVERRIDE in the effective set (it stays in the permitted set after setfsuid). */
static int dac_override_raise(struct thread_caps *saved)
{
        struct thread_caps c;
        int e = caps_get(saved);

        if (e < 0)
                return e;
        c = *saved;
        c.data[CAP_TO_INDEX(CAP_DAC_OVERRIDE)].effective |= CAP_TO_MASK(CAP_DAC_OVERRIDE);
        return caps_set(&c);
}

static int open_dir(int dfd, const char *name)
{
        struct open_how how = {
            .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
            .resolve = RESOLVE_NO_MAGICLINKS,
        };
        return openat2(dfd, name, &how, sizeof(how));
}

static int walk(const char *path, int *ret_dirfd)
{
        _cleanup_free_ char *dir = strdup(path);
        _cleanup_close_ int dfd = -EBADF;
        char *p, *save = NULL;
        bool created = false;

        if (!dir)
                return -ENOMEM;
        dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        for (p = strtok_r(dir, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
                int nfd = open_dir(dfd, p);

                created = false;
                if (nfd < 0 && errno == ENOENT) {
                        if (mkdirat(dfd, p, 0755) == 0)
                                created = true;
                        else if (errno != EEXIST) /* EEXIST: created meanwhile, or a
                                                     dangling symlink (open says which) */
                                return negative_errno();
                        nfd = open_dir(dfd, p);
                }
                if (nfd < 0)
                        return errno == ENOENT ? -ENOTDIR : negative_errno();
                safe_close(dfd);
                dfd = nfd;
        }
        if (ret_dirfd)
                *ret_dirfd = TAKE_FD(dfd);
        return created ? 1 : 0;
}

/* Back to the effective set before the raise. Should capset fail, a round trip of the fs uid
 * through 0 clears every file-system capability from the effective set all the same. */
static void dac_override_drop(struct thread_caps *saved)
{
        uid_t fsuid;

        if (caps_set(saved) >= 0)
                return;
        fsuid = (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
        if (fsuid != 0) {
                syscall(SYS_setfsuid, 0);
                syscall(SYS_setfsuid, fsuid);
        }
}

int agent_fs_ensure_dirs(const char *dir, int *ret_dirfd)
{
        struct thread_caps saved;
        int e;

        if (dir[0] != '/')
                return -EINVAL;
        e = dac_override_raise(&saved);
        if (e < 0)
                return e;
        e = walk(dir, ret_dirfd);
        dac_override_drop(&saved);
        return e;
}
