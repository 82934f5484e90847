/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "missing-syscalls.h"

/* The bound for another user's parents: uid 0, gid 0, no capabilities (agent_fs_become_bare;
 * root itself holds six, core/users.h, which would reach into other users' directories). */
static const gid_t root_groups[] = {0};
static const struct agent_user sandbox_root = {
    .name = (char *)"root",
    .uid = 0,
    .gid = 0,
    .n_groups = 1,
    .groups = (gid_t *)root_groups,
};

static int open_dir(int dfd, const char *name)
{
        struct open_how how = {
            .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
            .resolve = RESOLVE_NO_MAGICLINKS,
        };
        int fd = openat2(dfd, name, &how, sizeof(how));
        return fd < 0 ? negative_errno() : fd;
}

/* Look name up in dfd with the user's rights, else with the sandbox root's. */
static int lookup(const struct agent_user *u, int dfd, const char *name)
{
        int fd = open_dir(dfd, name), e;

        if (fd != -EACCES || u->uid == 0)
                return fd;
        if ((e = agent_fs_become_bare(&sandbox_root)) < 0)
                return e;
        fd = open_dir(dfd, name);
        if ((e = agent_fs_become(u)) < 0) {
                safe_close(fd);
                return e;
        }
        return fd;
}

/* Whether the sandbox's root may create an entry in dfd (write and search, as the kernel checks
 * them for it: read-only mounts and ACLs included). */
static int root_may_create(const struct agent_user *u, int dfd)
{
        int r, e;

        if ((e = agent_fs_become_bare(&sandbox_root)) < 0)
                return e;
        r = faccessat(dfd, "", W_OK | X_OK, AT_EMPTY_PATH | AT_EACCESS) < 0 ? negative_errno() : 0;
        if ((e = agent_fs_become(u)) < 0)
                return e;
        return r;
}

/* mkdir name in dfd, owned by the user: with the user's rights, else where the sandbox's root
 * could create it, with CAP_DAC_OVERRIDE for that one mkdirat (the fs ids make the directory
 * the user's: no chown, so nothing swapped in meanwhile can be chowned). */
static int make_dir(const struct agent_user *u, int dfd, const char *name)
{
        int e;

        if (mkdirat(dfd, name, 0755) == 0)
                return 0;
        e = negative_errno();
        if (e != -EACCES || u->uid == 0)
                return e;
        if ((e = root_may_create(u, dfd)) < 0)
                return e;
        if ((e = agent_fs_cap_raise(CAP_DAC_OVERRIDE)) < 0)
                return e;
        e = mkdirat(dfd, name, 0755) < 0 ? negative_errno() : 0;
        if (agent_fs_cap_lower() < 0) {
                /* Never go on with the capability raised: back to the agent, and fail. */
                agent_fs_restore();
                return -EPERM;
        }
        return e;
}

int agent_fs_ensure_dirs(const struct agent_user *u, const char *path, int *ret_dirfd)
{
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int dfd = -EBADF;
        char *p, *save = NULL;
        bool created = false;

        if (path[0] != '/')
                return -EINVAL;
        if (!(dir = strdup(path)))
                return -ENOMEM;
        dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        for (p = strtok_r(dir, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
                int nfd = lookup(u, dfd, p), e;

                created = false;
                if (nfd == -ENOENT) {
                        e = make_dir(u, dfd, p);
                        if (e == 0)
                                created = true;
                        else if (e != -EEXIST) /* EEXIST: created meanwhile, or a dangling
                                                  symlink (the lookup says which) */
                                return e;
                        nfd = lookup(u, dfd, p);
                }
                if (nfd < 0)
                        return nfd == -ENOENT ? -ENOTDIR : nfd;
                safe_close(dfd);
                dfd = nfd;
        }
        if (ret_dirfd)
                *ret_dirfd = TAKE_FD(dfd);
        return created ? 1 : 0;
}
