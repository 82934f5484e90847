/* SPDX-License-Identifier: Apache-2.0 */
/* The egress CA into a sandbox's CA bundle (jail-ca.h). */
#include "jail-ca.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "missing-syscalls.h"

/* The directory of the bundle below root_fd, symlinks resolved inside the root. */
static int open_dir(int root_fd)
{
        struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
                               .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
        int fd = openat2(root_fd, "etc/ssl/certs", &how, sizeof(how));
        return fd < 0 ? -errno : fd;
}

int jail_ca_install(int root_fd, uid_t uid, const char *pem)
{
        if (!pem || !*pem)
                return 0;
        _cleanup_close_ int dfd = open_dir(root_fd);
        if (dfd < 0) /* a template without a CA store: nothing to extend */
                return dfd == -ENOENT ? 0 : dfd;
        const char *name = strrchr(SBX_JAIL_CA_BUNDLE, '/') + 1;
        _cleanup_free_ char *old = NULL;
        size_t len = 0;
        _cleanup_close_ int in = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (in >= 0 && fstat(in, &st) == 0 && S_ISREG(st.st_mode)) {
                int r = read_all(in, SBX_JAIL_CA_BUNDLE_MAX, &old, &len);
                if (r < 0)
                        return r;
                if (memmem(old, len, pem, strlen(pem))) /* there already (an attach again) */
                        return 0;
        }
        char tmp[64];
        snprintf(tmp, sizeof(tmp), ".%s.sbx", name);
        (void)unlinkat(dfd, tmp, 0);
        _cleanup_close_ int out =
            openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (out < 0)
                return -errno;
        int r = len ? write_full(out, old, len) : 0;
        if (r >= 0 && len && old[len - 1] != '\n')
                r = write_full(out, "\n", 1);
        if (r >= 0)
                r = write_full(out, pem, strlen(pem));
        if (r >= 0 && fchown(out, uid, uid) < 0)
                r = -errno;
        if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
                r = -errno;
        if (r < 0)
                (void)unlinkat(dfd, tmp, 0);
        return r;
}
