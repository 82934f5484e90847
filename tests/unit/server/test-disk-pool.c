/* SPDX-License-Identifier: Apache-2.0 */
/* The storage pool on a real btrfs image (storage/disk-pool.h): a subvolume's limit is EDQUOT
 * from write(), a snapshot shares what it holds, a writable snapshot starts from it, usage is
 * read from the qgroups, the pool grows while in use and goes with its last user. Needs root,
 * a kernel with btrfs, loop devices and mkfs.btrfs; says so and passes without them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "storage/disk-pool.h"
#include "unit.h"

static char state[256];

/* Write name under the subvolume's upper/ until it fails: how many bytes went in, the errno. */
static long long fill(const char *sub, const char *name, long long max, int *ret_errno)
{
        char path[600];
        static char chunk[1 << 16];
        memset(chunk, 'x', sizeof(chunk));
        snprintf(path, sizeof(path), "%s/upper/%s", sub, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        long long done = 0;
        *ret_errno = fd < 0 ? errno : 0;
        while (fd >= 0 && done < max) {
                ssize_t n = write(fd, chunk, sizeof(chunk));
                if (n < 0) {
                        *ret_errno = errno;
                        break;
                }
                done += n;
        }
        if (fd >= 0 && fsync(fd) < 0 && !*ret_errno)
                *ret_errno = errno;
        if (fd >= 0)
                close(fd);
        return done;
}

static bool mounted(const char *path)
{
        char line[8192], want[600];
        snprintf(want, sizeof(want), " %s ", path);
        FILE *f = fopen("/proc/self/mountinfo", "re");
        bool found = false;
        while (f && !found && fgets(line, sizeof(line), f))
                found = strstr(line, want) != NULL;
        if (f)
                fclose(f);
        return found;
}

static void test_pool(void)
{
        struct disk_pool *p = NULL;
        char sub[512], snap[512], root[300];
        int e;
        CHECK_EQ_INT(disk_pool_open(state, 512ULL << 20, &p), 0);
        if (!p)
                return;
        CHECK_STREQ(disk_pool_kind(p), "image");
        snprintf(root, sizeof(root), "%s/pool", state);
        CHECK(mounted(root));

        /* a 32 MiB disk: EDQUOT from write() before 33 MiB, the earlier file intact */
        CHECK_EQ_INT(disk_pool_upper_create(p, "a", 32 << 20, NULL), 0);
        CHECK_EQ_INT(disk_pool_upper_create(p, "a", 32 << 20, NULL), -EEXIST);
        CHECK(disk_pool_has_upper(p, "a"));
        CHECK(!disk_pool_has_upper(p, "b"));
        CHECK_EQ_INT(disk_pool_upper_path(p, "a", sub, sizeof(sub)), 0);
        struct stat st;
        CHECK(stat(sub, &st) == 0);
        char work[600];
        snprintf(work, sizeof(work), "%s/work", sub);
        CHECK(stat(work, &st) == 0 && (st.st_mode & 07777) == 0700 && st.st_uid == 0);
        CHECK_EQ_INT(fill(sub, "keep", 4 << 20, &e), 4 << 20);
        CHECK_EQ_INT(e, 0);
        long long got = fill(sub, "big", 64 << 20, &e);
        CHECK_EQ_INT(e, EDQUOT);
        CHECK(got < (33LL << 20) && got > (20LL << 20));
        snprintf(work, sizeof(work), "%s/upper/keep", sub);
        CHECK(stat(work, &st) == 0 && st.st_size == 4 << 20);
        sync();
        struct disk_pool_use u;
        CHECK_EQ_INT(disk_pool_upper_usage(p, "a", &u), 0);
        CHECK_EQ_INT(u.limit, 32 << 20);
        CHECK(u.referenced > (20LL << 20) && u.referenced <= (33LL << 20));

        /* a read-only snapshot shares every extent: the source's exclusive bytes go to ~0 */
        CHECK_EQ_INT(disk_pool_snapshot(p, "a", "s1", snap, sizeof(snap)), 0);
        snprintf(work, sizeof(work), "%s/upper/keep", snap);
        CHECK(stat(work, &st) == 0 && st.st_size == 4 << 20);
        CHECK(open(work, O_WRONLY | O_CLOEXEC) < 0 && errno == EROFS);
        sync();
        CHECK_EQ_INT(disk_pool_upper_usage(p, "a", &u), 0);
        CHECK(u.exclusive < (1 << 20));

        /* a writable snapshot of it, with a limit of its own: the data counts against it */
        CHECK_EQ_INT(disk_pool_upper_create(p, "b", 40 << 20, snap), 0);
        CHECK_EQ_INT(disk_pool_upper_path(p, "b", sub, sizeof(sub)), 0);
        snprintf(work, sizeof(work), "%s/upper/keep", sub);
        CHECK(stat(work, &st) == 0 && st.st_size == 4 << 20);
        got = fill(sub, "more", 64 << 20, &e);
        CHECK_EQ_INT(e, EDQUOT);
        CHECK(got < (20LL << 20)); /* 40 MiB less what it already references */
        CHECK_EQ_INT(disk_pool_upper_create(p, "c", 8 << 20, "/nonexistent/snap"), -ENOENT);

        char **names = NULL;
        CHECK_EQ_INT(disk_pool_list(p, true, &names), 1);
        CHECK(names && names[0] && strcmp(names[0], "s1") == 0);
        for (size_t i = 0; names && names[i]; i++)
                free(names[i]);
        free(names);

        /* bad names never reach the file system */
        CHECK_EQ_INT(disk_pool_upper_create(p, "../x", 1 << 20, NULL), -EINVAL);
        CHECK_EQ_INT(disk_pool_upper_create(p, ".probe", 1 << 20, NULL), -EINVAL);
        CHECK_EQ_INT(disk_pool_snapshot(p, "a", "x/y", snap, sizeof(snap)), -EINVAL);

        /* grown while subvolumes are in use */
        struct disk_pool_space sp, sp2;
        CHECK_EQ_INT(disk_pool_space(p, &sp), 0);
        CHECK_EQ_INT(sp.image_bytes, 512ULL << 20);
        CHECK_EQ_INT(disk_pool_grow(p, 256ULL << 20), -EINVAL);
        CHECK_EQ_INT(disk_pool_grow(p, 768ULL << 20), 0);
        CHECK_EQ_INT(disk_pool_space(p, &sp2), 0);
        CHECK_EQ_INT(sp2.image_bytes, 768ULL << 20);
        CHECK(sp2.size >= sp.size + (200ULL << 20));
        CHECK_EQ_INT(disk_pool_keep_reserved(p), 0);

        /* deletes; a sandbox dir left keeps the pool mounted at close */
        CHECK_EQ_INT(disk_pool_upper_remove(p, "a"), 0);
        CHECK_EQ_INT(disk_pool_upper_remove(p, "a"), 0);
        CHECK_EQ_INT(disk_pool_snapshot_remove(p, "s1"), 0);
        char dir[400];
        snprintf(dir, sizeof(dir), "%s/sandboxes/b", state);
        CHECK(mkdir(dir, 0700) == 0);
        disk_pool_close(p, true);
        CHECK(mounted(root));

        /* opened again (found mounted), "b" is still there; closed with no sandbox left */
        p = NULL;
        CHECK_EQ_INT(disk_pool_open(state, 0, &p), 0);
        if (!p)
                return;
        CHECK(disk_pool_has_upper(p, "b"));
        CHECK_EQ_INT(disk_pool_upper_remove(p, "b"), 0);
        CHECK(rmdir(dir) == 0);
        disk_pool_close(p, true);
        CHECK(!mounted(root));
}

int main(void)
{
        char why[160];
        snprintf(state, sizeof(state), "/tmp/sbx-unit-pool.XXXXXX");
        if (getuid() != 0 || !mkdtemp(state)) {
                fprintf(stderr, "test-disk-pool: needs root, skipped\n");
                return unit_finish("test-disk-pool");
        }
        char sb[300];
        snprintf(sb, sizeof(sb), "%s/sandboxes", state);
        (void)mkdir(sb, 0700);
        if (!disk_pool_available(state, why, sizeof(why)))
                fprintf(stderr, "test-disk-pool: %s, skipped\n", why);
        else
                test_pool();
        rm_rf(state);
        return unit_finish("test-disk-pool");
}
