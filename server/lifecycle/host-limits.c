/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/host-limits.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup-util.h"
#include "core/server-config.h"
#include "lifecycle/teardown.h"
#include "log.h"
#include "macros.h"

/* The largest value fs.file-max takes (LONG_MAX; the kernel caps what is written). */
#define FILE_MAX_TARGET "9223372036854775807"

static int raise_file_max(void)
{
        char buf[32] = "";
        _cleanup_close_ int fd = open(HOST_FILE_MAX, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        unsigned long long cur = strtoull(buf, NULL, 10);
        if (cur >= strtoull(FILE_MAX_TARGET, NULL, 10))
                return 0;
        if (pwrite(fd, FILE_MAX_TARGET, strlen(FILE_MAX_TARGET), 0) < 0)
                return -errno;
        log_info("fs.file-max raised from %llu: open files are bounded by each sandbox's memory "
                 "limit, not by one count for the whole host",
                 cur);
        return 0;
}

int host_limits_apply(const struct sbxd_config *c)
{
        int ret = 0;
        int r = cgroup_limit_parent(CGROUP_PARENT, c->total_memory_mb << 20, c->total_pids);
        if (r < 0) {
                log_warning_errno(r, "cgroup %s: setting the limits of all sandboxes: %m",
                                  CGROUP_PARENT);
                ret = r;
        } else if (r == 0) {
                log_warning("cgroup %s: no memory or pids controller to limit all sandboxes with",
                            CGROUP_PARENT);
        }
        r = raise_file_max();
        if (r < 0) {
                log_warning_errno(r, "raising %s: %m", HOST_FILE_MAX);
                if (ret == 0)
                        ret = r;
        }
        return ret;
}
