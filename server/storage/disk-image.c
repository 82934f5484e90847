/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/disk-image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/stats.h"
#include "log.h"
#include "macros.h"

static pthread_mutex_t pristine_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t admit_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *mkfs_path(void)
{
        static const char *const paths[] = {"/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"};
        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                if (access(paths[i], X_OK) == 0)
                        return paths[i];
        return NULL;
}

/* mkfs.ext4 on the (sized) file path: 4 KiB blocks, an inode per 8 KiB, nothing reserved for
 * root, no journal, lazy inode tables (never zeroed: the file is sparse). sbxd's monitor
 * thread reaps every child that exits (lifecycle/monitor.c), so the exit status cannot be waited
 * for: a shell runs mkfs and says "ok" on a pipe when it succeeded. */
static int format(const char *path, bool volume)
{
        const char *mkfs = mkfs_path();
        if (!mkfs)
                return -ENOENT;
        /* A volume outlives every sandbox and sbxd restarts: it gets a journal (never zeroed:
         * lazy_journal_init), and its root belongs to the sandbox's user (uid 1000 inside). */
        const char *features = volume ? "has_journal" : "^has_journal";
        const char *ext = volume ? "lazy_itable_init=1,lazy_journal_init=1,nodiscard,"
                                   "root_owner=" VOLUME_ROOT_OWNER
                                 : "lazy_itable_init=1,nodiscard,root_owner=0:0";
        const char *argv[] = {"/bin/sh", "-c",     "\"$0\" \"$@\" 3>&- && echo ok >&3",
                              mkfs,      "-q",     "-F",
                              "-b",      "4096",   "-i",
                              "8192",    "-m",     "0",
                              "-O",      features, "-E",
                              ext,       "-L",     volume ? "sbx-volume" : "sbx-disk",
                              path,      NULL};
        const char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        int pfd[2];
        if (pipe2(pfd, O_CLOEXEC) < 0)
                return -errno;
        posix_spawn_file_actions_t fa;
        pid_t pid;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, pfd[1], 3);
        int e = posix_spawn(&pid, "/bin/sh", &fa, NULL, (char *const *)argv, (char *const *)envp);
        posix_spawn_file_actions_destroy(&fa);
        close(pfd[1]);
        if (e != 0) {
                close(pfd[0]);
                return -e;
        }
        char buf[8];
        size_t got = 0;
        for (;;) { /* until EOF: the shell and mkfs are gone */
                ssize_t n = read(pfd[0], buf + got, sizeof(buf) - 1 - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0 || (got += (size_t)n) >= sizeof(buf) - 1)
                        break;
        }
        close(pfd[0]);
        buf[got] = 0;
        return strcmp(buf, "ok\n") == 0 ? 0 : -EIO;
}

/* A fresh file system in a new file path of bytes (sparse). */
static int make_image(const char *path, uint64_t bytes, bool volume)
{
        int r = 0, fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (ftruncate(fd, (off_t)bytes) < 0)
                r = -errno;
        close(fd);
        if (r == 0)
                r = format(path, volume);
        return r;
}

/* How many pristine images dir holds. */
static unsigned count_pristine(const char *dir)
{
        DIR *d = opendir(dir);
        unsigned n = 0;
        for (struct dirent *de; d && (de = readdir(d));)
                if (strncmp(de->d_name, "ext4-", 5) == 0 && !strstr(de->d_name, ".tmp."))
                        n++;
        if (d)
                closedir(d);
        return n;
}

/* <state>/disk-images/ext4-<bytes>, formatted on first use; -EDQUOT when DISK_IMAGE_CACHE_MAX
 * other sizes are kept already (sizes are the caller's to choose). */
static int pristine(const char *state_dir, uint64_t bytes, char path[static 4096])
{
        char dir[4000], tmp[4200];
        if ((size_t)snprintf(dir, sizeof(dir), "%s/disk-images", state_dir) >= sizeof(dir) ||
            (size_t)snprintf(path, 4096, "%s/ext4-%" PRIu64, dir, bytes) >= 4096)
                return -ENAMETOOLONG;
        pthread_mutex_lock(&pristine_lock);
        int r = 0;
        if (access(path, R_OK) == 0)
                goto out;
        if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
                r = -errno;
                goto out;
        }
        if (count_pristine(dir) >= DISK_IMAGE_CACHE_MAX) {
                r = -EDQUOT;
                goto out;
        }
        snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
        r = make_image(tmp, bytes, false);
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void)unlink(tmp);
out:
        pthread_mutex_unlock(&pristine_lock);
        return r;
}

/* Copy the data extents of src into a new dst of the same size (holes stay holes). */
static int copy_sparse(const char *src, const char *dst)
{
        _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return -errno;
        struct stat st;
        if (fstat(in, &st) < 0)
                return -errno;
        _cleanup_close_ int out =
            open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (out < 0 || ftruncate(out, st.st_size) < 0)
                return -errno;
        for (off_t pos = 0; pos < st.st_size;) {
                off_t data = lseek(in, pos, SEEK_DATA);
                if (data < 0)
                        return errno == ENXIO ? 0 : -errno; /* only a hole is left */
                off_t hole = lseek(in, data, SEEK_HOLE);
                if (hole < 0)
                        return -errno;
                for (off_t o_in = data, o_out = data; o_in < hole;) {
                        ssize_t n =
                            copy_file_range(in, &o_in, out, &o_out, (size_t)(hole - o_in), 0);
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0)
                                return n < 0 ? -errno : -EIO;
                }
                pos = hole;
        }
        return 0;
}

/* Adds the images <parent>/<entry>/disk.img to u. */
static int usage_of(const char *parent, struct disk_usage *u)
{
        char path[4096];
        DIR *d = opendir(parent);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        for (struct dirent *de; (de = readdir(d));) {
                struct stat st;
                if (de->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "%s/" DISK_IMAGE_NAME, de->d_name);
                if (fstatat(dirfd(d), path, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                uint64_t size = (uint64_t)st.st_size, used = (uint64_t)st.st_blocks * 512;
                u->promised += size;
                u->used += MIN(used, size);
                u->images++;
        }
        closedir(d);
        return 0;
}

int disk_image_usage(const char *state_dir, struct disk_usage *ret)
{
        char path[4096];
        struct statvfs sv;
        *ret = (struct disk_usage){0};
        if (statvfs(state_dir, &sv) < 0)
                return -errno;
        ret->free = (uint64_t)sv.f_bavail * sv.f_frsize;
        /* sandbox disks and volumes share the state disk and one admission */
        snprintf(path, sizeof(path), "%s/sandboxes", state_dir);
        int r = usage_of(path, ret);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/" DISK_IMAGE_VOLUMES_DIR, state_dir);
        return usage_of(path, ret);
}

/* Under admit_lock: whether bytes more can be promised. */
static int admit(const char *state_dir, uint64_t bytes, const struct disk_policy *pol,
                 const char *what, char *errmsg, size_t errlen)
{
        struct disk_usage u;
        int r = disk_image_usage(state_dir, &u);
        if (r < 0)
                return r;
        /* What sandbox disks can hold: the free space, what they occupy already, less the
         * reserve. Preallocated (overcommit 1) images occupy all they promise, so this is "the
         * free space less the reserve" for a new one. */
        double room = (double)u.free + (double)u.used - (double)pol->reserve_bytes;
        if ((double)(u.promised + bytes) <= pol->overcommit * room)
                return 0;
        stats_count_disk_refused();
        if (pol->overcommit > 1.0)
                snprintf(errmsg, errlen,
                         "not enough space on the host's state disk for a %llu MiB %s: "
                         "%llu MiB free, %llu MiB kept in reserve, %llu MiB promised to %u "
                         "other sandbox disks and volumes (overcommit %g)",
                         (unsigned long long)(bytes >> 20), what,
                         (unsigned long long)(u.free >> 20),
                         (unsigned long long)(pol->reserve_bytes >> 20),
                         (unsigned long long)(u.promised >> 20), u.images, pol->overcommit);
        else
                snprintf(errmsg, errlen,
                         "not enough space on the host's state disk for a %llu MiB %s: "
                         "%llu MiB free, %llu MiB kept in reserve",
                         (unsigned long long)(bytes >> 20), what,
                         (unsigned long long)(u.free >> 20),
                         (unsigned long long)(pol->reserve_bytes >> 20));
        log_warning("%s", errmsg);
        return -ENOSPC;
}

/* Reserve every block of path (nothing is written: unwritten extents). */
static int preallocate(const char *path, uint64_t bytes)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        int e = posix_fallocate(fd, 0, (off_t)bytes);
        return -e;
}

/* Under admit_lock: admission, then the image at dst (a copy of src, or formatted when src is
 * NULL), preallocated under overcommit 1. */
static int create_admitted(const char *state_dir, uint64_t bytes, const char *src, const char *dst,
                           bool volume, const struct disk_policy *pol, char *errmsg, size_t errlen)
{
        const char *what = volume ? "volume" : "sandbox disk";
        int r = admit(state_dir, bytes, pol, what, errmsg, errlen);
        if (r < 0)
                return r;
        r = src ? copy_sparse(src, dst) : make_image(dst, bytes, volume);
        if (r >= 0 && pol->overcommit <= 1.0) {
                r = preallocate(dst, bytes);
                if (r == -ENOSPC) {
                        stats_count_disk_refused();
                        snprintf(errmsg, errlen,
                                 "not enough space on the host's state disk for a %llu MiB %s",
                                 (unsigned long long)(bytes >> 20), what);
                }
        }
        if (r < 0)
                (void)unlink(dst);
        return r;
}

int disk_image_create(const char *state_dir, uint64_t bytes, const char *dir,
                      const struct disk_policy *pol, char *errmsg, size_t errlen)
{
        char src[4096], dst[4096];
        snprintf(dst, sizeof(dst), "%s/" DISK_IMAGE_NAME, dir);
        int r = pristine(state_dir, bytes, src);
        if (r < 0 && r != -EDQUOT)
                return r;
        /* From the check to the image's blocks, one create at a time: two must not both be
         * promised the same free space. An unusual size (-EDQUOT) is formatted for this
         * sandbox alone. */
        pthread_mutex_lock(&admit_lock);
        r = create_admitted(state_dir, bytes, r == -EDQUOT ? NULL : src, dst, false, pol, errmsg,
                            errlen);
        pthread_mutex_unlock(&admit_lock);
        return r;
}

int disk_image_create_volume(const char *state_dir, uint64_t bytes, const char *dir,
                             const struct disk_policy *pol, char *errmsg, size_t errlen)
{
        char dst[4096];
        snprintf(dst, sizeof(dst), "%s/" DISK_IMAGE_NAME, dir);
        pthread_mutex_lock(&admit_lock);
        int r = create_admitted(state_dir, bytes, NULL, dst, true, pol, errmsg, errlen);
        pthread_mutex_unlock(&admit_lock);
        return r;
}

int disk_image_remove(const char *dir)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/" DISK_IMAGE_NAME, dir);
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

bool disk_image_probe(const char *state_dir, uint64_t default_bytes)
{
        char path[4096];
        if (access("/dev/loop-control", R_OK | W_OK) < 0) {
                log_warning("no /dev/loop-control (%m): sandbox disks are tmpfs, charged to "
                            "their memory");
                return false;
        }
        int r = pristine(state_dir, default_bytes, path);
        if (r < 0) {
                log_warning_errno(r,
                                  "cannot format a disk image with mkfs.ext4 (%m): sandbox disks "
                                  "are tmpfs, charged to their memory");
                return false;
        }
        return true;
}
