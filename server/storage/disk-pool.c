/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/disk-pool.h"
#include "storage/btrfs-util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/loop.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macros.h"

struct disk_pool {
        char state[PATH_MAX - 64]; /* room for the names below it */
        char root[PATH_MAX];       /* <state>/pool */
        char image[PATH_MAX];      /* <state>/pool.img, "" for a state-dir pool */
        int root_fd, sandboxes_fd, snapshots_fd;
        char qgroups[128]; /* /sys/fs/btrfs/<fsid>/qgroups: current figures; "" when absent */
        pthread_mutex_t grow_lock;
};

static const char *mkfs_btrfs(void)
{
        static const char *const paths[] = {"/usr/sbin/mkfs.btrfs", "/sbin/mkfs.btrfs",
                                            "/usr/bin/mkfs.btrfs"};
        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                if (access(paths[i], X_OK) == 0)
                        return paths[i];
        return NULL;
}

static bool kernel_has_btrfs(void)
{
        char line[256];
        bool found = false;
        FILE *f = fopen("/proc/filesystems", "re");
        while (f && !found && fgets(line, sizeof(line), f))
                found = strstr(line, "\tbtrfs\n") != NULL;
        if (f)
                fclose(f);
        return found;
}

bool disk_pool_available(const char *state_dir, char *why, size_t whylen)
{
        if (!kernel_has_btrfs()) {
                snprintf(why, whylen, "this kernel has no btrfs");
                return false;
        }
        _cleanup_close_ int fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0 && btrfs_is_btrfs(fd) == 1)
                return true;
        char img[PATH_MAX];
        snprintf(img, sizeof(img), "%s/" DISK_POOL_IMAGE, state_dir);
        if (access(img, F_OK) < 0 && !mkfs_btrfs()) {
                snprintf(why, whylen, "mkfs.btrfs (btrfs-progs) is not installed");
                return false;
        }
        if (access("/dev/loop-control", R_OK | W_OK) < 0) {
                snprintf(why, whylen, "no /dev/loop-control");
                return false;
        }
        return true;
}

/* mkfs.btrfs on the image: -K (no discard: the image keeps its preallocated blocks), label
 * sbx-pool. Runs before sbxd's monitor reaps children, so it is waited for directly. */
static int format(const char *path)
{
        const char *mkfs = mkfs_btrfs();
        if (!mkfs)
                return -ENOENT;
        const char *argv[] = {mkfs, "-q", "-f", "-K", "-L", "sbx-pool", path, NULL};
        const char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
        posix_spawn_file_actions_t fa;
        pid_t pid;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        int e = posix_spawn(&pid, mkfs, &fa, NULL, (char *const *)argv, (char *const *)envp);
        posix_spawn_file_actions_destroy(&fa);
        if (e != 0)
                return -e;
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* The default size: DISK_POOL_DEFAULT_PCT of the state file system's free space, whole GiB,
 * within the default bounds (and never more than is free). */
static int default_size(const char *state, uint64_t *ret)
{
        struct statvfs sv;
        if (statvfs(state, &sv) < 0)
                return -errno;
        uint64_t free_b = (uint64_t)sv.f_bavail * sv.f_frsize;
        uint64_t want = free_b / 100 * DISK_POOL_DEFAULT_PCT;
        want = MIN(MAX(want, DISK_POOL_DEFAULT_MIN), DISK_POOL_DEFAULT_MAX);
        want = MIN(want, free_b / 2) & ~((1ULL << 30) - 1);
        if (want < DISK_POOL_MIN_BYTES)
                return -ENOSPC;
        *ret = want;
        return 0;
}

/* A new image of bytes, every block reserved on the host, formatted; renamed into place last,
 * so a crash leaves no half-made pool.img. */
static int make_image(const char *image, uint64_t bytes)
{
        char tmp[PATH_MAX + 16];
        snprintf(tmp, sizeof(tmp), "%s.tmp", image);
        (void)unlink(tmp);
        _cleanup_close_ int fd =
            open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        int r = -posix_fallocate(fd, 0, (off_t)bytes);
        if (r >= 0)
                r = format(tmp);
        if (r >= 0 && rename(tmp, image) < 0)
                r = -errno;
        if (r < 0)
                (void)unlink(tmp);
        return r;
}

/* The loop device already backed by image (an sbxd that died between attach and mount), as
 * "/dev/loopN"; -ENOENT when none. */
static int find_loop(const char *image, char *dev, size_t len)
{
        DIR *d = opendir("/sys/block");
        int r = -ENOENT;
        for (struct dirent *de; d && r == -ENOENT && (de = readdir(d));) {
                char path[PATH_MAX], back[PATH_MAX];
                if (strncmp(de->d_name, "loop", 4) != 0)
                        continue;
                snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file", de->d_name);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd < 0 ? -1 : read(fd, back, sizeof(back) - 1);
                if (n <= 0)
                        continue;
                back[n] = 0;
                back[strcspn(back, "\n")] = 0;
                if (strcmp(back, image) == 0)
                        r = (size_t)snprintf(dev, len, "/dev/%.32s", de->d_name) < len
                                ? 0
                                : -ENAMETOOLONG;
        }
        if (d)
                closedir(d);
        return r;
}

/* image on a free loop device: direct I/O (its pages are cached once, by the pool's file
 * system), autoclear (the device goes with the last unmount, or with its last fd while not
 * mounted: the caller mounts before closing the fd returned). Attachers take turns on an flock
 * of loop-control, as the jailer's do (LOOP_CTL_GET_FREE hands one device to every asker). */
static int attach_loop(const char *image, char *dev, size_t len)
{
        if (find_loop(image, dev, len) == 0) {
                int fd = open(dev, O_RDWR | O_CLOEXEC);
                return fd < 0 ? -errno : fd;
        }
        _cleanup_close_ int img = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_close_ int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
        if (img < 0 || ctl < 0)
                return -errno;
        struct loop_config cfg = {
            .fd = (uint32_t)img,
            .info = {.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO},
        };
        if (flock(ctl, LOCK_EX) < 0)
                return -errno;
        for (int attempt = 0; attempt < 32; attempt++) {
                int n = ioctl(ctl, LOOP_CTL_GET_FREE);
                if (n < 0)
                        return -errno;
                snprintf(dev, len, "/dev/loop%d", n);
                _cleanup_close_ int lfd = open(dev, O_RDWR | O_CLOEXEC);
                if (lfd < 0)
                        return -errno;
                if (ioctl(lfd, LOOP_CONFIGURE, &cfg) < 0) {
                        if (errno == EBUSY)
                                continue;
                        return -errno;
                }
                return TAKE_FD(lfd);
        }
        return -EBUSY;
}

/* Whether root is the mount point of a btrfs other than the state dir's. */
static bool mounted_pool(const char *state, const char *root)
{
        struct stat a, b;
        _cleanup_close_ int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd >= 0 && btrfs_is_btrfs(fd) == 1 && fstat(fd, &a) == 0 && stat(state, &b) == 0 &&
               a.st_dev != b.st_dev;
}

static int open_image_pool(struct disk_pool *p, uint64_t size)
{
        char dev[64];
        struct stat st;
        int r;
        snprintf(p->image, sizeof(p->image), "%s/" DISK_POOL_IMAGE, p->state);
        if (mkdir(p->root, 0700) < 0 && errno != EEXIST)
                return -errno;
        if (mounted_pool(p->state, p->root))
                return 0; /* an earlier sbxd's, kept while its sandboxes ran */
        if (stat(p->image, &st) < 0) {
                if (errno != ENOENT)
                        return -errno;
                if (!size && (r = default_size(p->state, &size)) < 0)
                        return r;
                log_info("storage pool: making a %" PRIu64 " MiB btrfs pool in %s%s", size >> 20,
                         p->image,
                         size ? "" : " (a quarter of the free space; --storage-pool SIZE)");
                if ((r = make_image(p->image, size)) < 0)
                        return r;
        }
        _cleanup_close_ int lfd = attach_loop(p->image, dev, sizeof(dev));
        if (lfd < 0)
                return lfd;
        /* nodiscard: a discard would punch holes in the image, un-reserving its blocks */
        if (mount(dev, p->root, "btrfs", MS_NOSUID | MS_NODEV | MS_NOATIME, "nodiscard") < 0)
                return -errno;
        return 0;
}

static int open_state_dir_pool(struct disk_pool *p)
{
        _cleanup_close_ int sfd = open(p->state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0)
                return -errno;
        int r = btrfs_subvol_create(sfd, DISK_POOL_DIR, 0);
        return r == -EEXIST ? 0 : r;
}

static int open_dir(int parent, const char *name)
{
        if (mkdirat(parent, name, 0700) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        return fd < 0 ? -errno : fd;
}

/* A throwaway subvolume with a 1 MiB limit, written past it: the write must fail with EDQUOT
 * (qgroups enforce here, at write() time) before 2 MiB went in. */
static int probe(struct disk_pool *p)
{
        char name[64];
        static const char chunk[64 * 1024];
        snprintf(name, sizeof(name), ".probe-%d", (int)getpid());
        (void)btrfs_subvol_delete(p->sandboxes_fd, name);
        int r = btrfs_subvol_create(p->sandboxes_fd, name, 1 << 20);
        if (r < 0)
                return r;
        _cleanup_close_ int sub =
            openat(p->sandboxes_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        _cleanup_close_ int fd =
            sub < 0 ? -EBADF : openat(sub, "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        r = fd < 0 ? -errno : -EOPNOTSUPP;
        for (size_t done = 0; fd >= 0 && done < (2u << 20);) {
                ssize_t n = write(fd, chunk, sizeof(chunk));
                if (n < 0) {
                        r = errno == EDQUOT ? 0 : -errno;
                        break;
                }
                done += (size_t)n;
        }
        fd = safe_close(fd);
        sub = safe_close(sub);
        (void)btrfs_subvol_delete(p->sandboxes_fd, name);
        return r;
}

static void pool_free(struct disk_pool *p)
{
        safe_close(p->root_fd);
        safe_close(p->sandboxes_fd);
        safe_close(p->snapshots_fd);
        pthread_mutex_destroy(&p->grow_lock);
        free(p);
}

int disk_pool_open(const char *state_dir, uint64_t size_bytes, struct disk_pool **ret)
{
        struct disk_pool *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->root_fd = p->sandboxes_fd = p->snapshots_fd = -EBADF;
        pthread_mutex_init(&p->grow_lock, NULL);
        snprintf(p->state, sizeof(p->state), "%s", state_dir);
        snprintf(p->root, sizeof(p->root), "%s/" DISK_POOL_DIR, state_dir);
        _cleanup_close_ int sfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = sfd < 0 ? -errno : btrfs_is_btrfs(sfd);
        if (r >= 0)
                r = r ? open_state_dir_pool(p) : open_image_pool(p, size_bytes);
        if (r >= 0 &&
            (p->root_fd = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)) < 0)
                r = -errno;
        if (r >= 0)
                r = btrfs_quota_enable(p->root_fd);
        char fsid[37];
        if (r >= 0 && btrfs_fsid(p->root_fd, fsid) >= 0) {
                snprintf(p->qgroups, sizeof(p->qgroups), "/sys/fs/btrfs/%s/qgroups", fsid);
                if (access(p->qgroups, R_OK) < 0)
                        p->qgroups[0] = 0;
        }
        if (r >= 0 && (p->sandboxes_fd = open_dir(p->root_fd, DISK_POOL_SANDBOXES)) < 0)
                r = p->sandboxes_fd;
        if (r >= 0 && (p->snapshots_fd = open_dir(p->root_fd, DISK_POOL_SNAPSHOTS)) < 0)
                r = p->snapshots_fd;
        if (r >= 0)
                r = probe(p);
        if (r >= 0 && p->image[0] && size_bytes) {
                struct stat st;
                if (stat(p->image, &st) == 0 && size_bytes > (uint64_t)st.st_size)
                        r = disk_pool_grow(p, size_bytes);
        }
        if (r < 0) {
                disk_pool_close(p, true);
                return r;
        }
        *ret = p;
        return 0;
}

const char *disk_pool_kind(const struct disk_pool *p)
{
        return p->image[0] ? "image" : "state-dir";
}

const char *disk_pool_root(const struct disk_pool *p)
{
        return p->root;
}

/* Whether <state>/sandboxes has an entry (a sandbox dir, running or persisted). */
static bool sandboxes_left(const char *state)
{
        char path[PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/sandboxes", state);
        DIR *d = opendir(path);
        bool any = false;
        for (struct dirent *de; d && !any && (de = readdir(d));)
                any = de->d_name[0] != '.';
        if (d)
                closedir(d);
        return any;
}

void disk_pool_close(struct disk_pool *p, bool unmount_if_idle)
{
        if (!p)
                return;
        char root[PATH_MAX], state[PATH_MAX - 64];
        bool image = p->image[0] != 0;
        snprintf(root, sizeof(root), "%s", p->root);
        snprintf(state, sizeof(state), "%s", p->state);
        pool_free(p);
        /* Sandbox dirs left (running sandboxes, persisted ones) keep the pool for the next
         * sbxd, which finds it mounted; otherwise its loop device goes with the unmount. */
        if (!image || !unmount_if_idle || sandboxes_left(state) || !mounted_pool(state, root))
                return;
        if (umount2(root, UMOUNT_NOFOLLOW) < 0 && umount2(root, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                log_warning_errno(errno, "storage pool: unmounting %s: %m", root);
}

int disk_pool_space(const struct disk_pool *p, struct disk_pool_space *ret)
{
        struct statvfs sv;
        struct stat st;
        if (fstatvfs(p->root_fd, &sv) < 0)
                return -errno;
        *ret = (struct disk_pool_space){
            .size = (uint64_t)sv.f_blocks * sv.f_frsize,
            .free = (uint64_t)sv.f_bavail * sv.f_frsize,
        };
        ret->used = ret->size > ret->free ? ret->size - ret->free : 0;
        if (p->image[0] && stat(p->image, &st) == 0)
                ret->image_bytes = (uint64_t)st.st_size;
        return 0;
}

int disk_pool_grow(struct disk_pool *p, uint64_t new_bytes)
{
        char dev[64];
        struct stat st;
        if (!p->image[0])
                return -EOPNOTSUPP;
        if (new_bytes > DISK_POOL_MAX_BYTES)
                return -EFBIG;
        pthread_mutex_lock(&p->grow_lock);
        _cleanup_close_ int fd = open(p->image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        int r = fd < 0 ? -errno : fstat(fd, &st) < 0 ? -errno : 0;
        if (r >= 0 && new_bytes <= (uint64_t)st.st_size)
                r = -EINVAL;
        if (r >= 0 && (r = -posix_fallocate(fd, 0, (off_t)new_bytes)) < 0)
                (void)!ftruncate(fd, st.st_size); /* nothing half-grown */
        if (r >= 0)
                r = find_loop(p->image, dev, sizeof(dev));
        if (r >= 0) {
                _cleanup_close_ int lfd = open(dev, O_RDWR | O_CLOEXEC);
                r = lfd < 0 || ioctl(lfd, LOOP_SET_CAPACITY, 0) < 0 ? -errno : 0;
        }
        if (r >= 0)
                r = btrfs_resize_max(p->root_fd);
        pthread_mutex_unlock(&p->grow_lock);
        if (r >= 0)
                log_info("storage pool: grown to %" PRIu64 " MiB", new_bytes >> 20);
        return r;
}

int disk_pool_keep_reserved(struct disk_pool *p)
{
        struct stat st;
        if (!p->image[0])
                return 0;
        pthread_mutex_lock(&p->grow_lock);
        _cleanup_close_ int fd = open(p->image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        int r = fd < 0 ? -errno : fstat(fd, &st) < 0 ? -errno : 0;
        if (r >= 0 && (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size)
                r = -posix_fallocate(fd, 0, st.st_size);
        pthread_mutex_unlock(&p->grow_lock);
        return r;
}

/* ---- subvolumes ---- */

static bool name_ok(const char *name)
{
        size_t n = strlen(name);
        return n > 0 && n < DISK_POOL_NAME_MAX && name[0] != '.' && !strchr(name, '/');
}

int disk_pool_upper_path(const struct disk_pool *p, const char *id, char *buf, size_t len)
{
        if (!name_ok(id))
                return -EINVAL;
        return (size_t)snprintf(buf, len, "%s/" DISK_POOL_SANDBOXES "/%s", p->root, id) >= len
                   ? -ENAMETOOLONG
                   : 0;
}

int disk_pool_snapshot_path(const struct disk_pool *p, const char *name, char *buf, size_t len)
{
        if (!name_ok(name))
                return -EINVAL;
        return (size_t)snprintf(buf, len, "%s/" DISK_POOL_SNAPSHOTS "/%s", p->root, name) >= len
                   ? -ENAMETOOLONG
                   : 0;
}

bool disk_pool_has_upper(const struct disk_pool *p, const char *id)
{
        struct stat st;
        return name_ok(id) && fstatat(p->sandboxes_fd, id, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISDIR(st.st_mode);
}

/* upper/ 0755, work/ and lower/ 0700, owned by on-disk 0 (sandbox root through the idmap). */
static int make_layout(int sub)
{
        static const struct {
                const char *name;
                mode_t mode;
        } dirs[] = {{"upper", 0755}, {"work", 0700}, {"lower", 0700}};
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++)
                if ((mkdirat(sub, dirs[i].name, dirs[i].mode) < 0 && errno != EEXIST) ||
                    fchmodat(sub, dirs[i].name, dirs[i].mode, 0) < 0 ||
                    fchownat(sub, dirs[i].name, 0, 0, AT_SYMLINK_NOFOLLOW) < 0)
                        return -errno;
        return 0;
}

int disk_pool_upper_create(struct disk_pool *p, const char *id, uint64_t limit_bytes,
                           const char *seed)
{
        if (!name_ok(id))
                return -EINVAL;
        int r;
        if (seed) {
                _cleanup_close_ int src =
                    open(seed, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (src < 0)
                        return -errno;
                r = btrfs_snapshot(src, p->sandboxes_fd, id, false, limit_bytes);
        } else {
                r = btrfs_subvol_create(p->sandboxes_fd, id, limit_bytes);
        }
        if (r < 0)
                return r;
        _cleanup_close_ int sub =
            openat(p->sandboxes_fd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        r = sub < 0 ? -errno : make_layout(sub);
        if (r < 0)
                (void)btrfs_subvol_delete(p->sandboxes_fd, id);
        return r;
}

/* Delete a subvolume; a sandbox's mount namespace may still be going away for a moment after
 * its last process (EBUSY while a mount inside it lives). */
static int delete_subvol(int dir_fd, const char *name)
{
        int r = -EBUSY;
        for (int i = 0; i < 50 && r == -EBUSY; i++) {
                r = btrfs_subvol_delete(dir_fd, name);
                if (r == -EBUSY)
                        usleep(20 * 1000);
        }
        return r == -ENOENT ? 0 : r;
}

int disk_pool_upper_remove(struct disk_pool *p, const char *id)
{
        return name_ok(id) ? delete_subvol(p->sandboxes_fd, id) : -EINVAL;
}

int disk_pool_snapshot(struct disk_pool *p, const char *id, const char *name, char *ret_path,
                       size_t len)
{
        if (!name_ok(id) || !name_ok(name))
                return -EINVAL;
        _cleanup_close_ int src =
            openat(p->sandboxes_fd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (src < 0)
                return -errno;
        int r = btrfs_snapshot(src, p->snapshots_fd, name, true, 0);
        return r < 0 ? r : disk_pool_snapshot_path(p, name, ret_path, len);
}

int disk_pool_snapshot_remove(struct disk_pool *p, const char *name)
{
        return name_ok(name) ? delete_subvol(p->snapshots_fd, name) : -EINVAL;
}

int disk_pool_list(const struct disk_pool *p, bool snapshots, char ***ret)
{
        int fd = fcntl(snapshots ? p->snapshots_fd : p->sandboxes_fd, F_DUPFD_CLOEXEC, 3);
        DIR *d = fd < 0 ? NULL : fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -errno;
        }
        rewinddir(d);
        char **v = NULL;
        size_t n = 0;
        int r = 0;
        for (struct dirent *de; r >= 0 && (de = readdir(d));) {
                if (!name_ok(de->d_name))
                        continue;
                char **nv = realloc(v, (n + 2) * sizeof(*v));
                if (!nv || !(nv[n] = strdup(de->d_name))) {
                        v = nv ? nv : v;
                        r = -ENOMEM;
                        break;
                }
                v = nv;
                v[++n] = NULL;
        }
        closedir(d);
        if (r < 0) {
                for (size_t i = 0; i < n; i++)
                        free(v[i]);
                free(v);
                return r;
        }
        if (!v && !(v = calloc(1, sizeof(*v))))
                return -ENOMEM;
        *ret = v;
        return (int)n;
}

/* A number from the qgroup's sysfs file name: -errno when unreadable. */
static int read_sysfs_u64(const char *dir, const char *name, uint64_t *ret)
{
        char path[300], buf[32];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return n < 0 ? -errno : -EIO;
        buf[n] = 0;
        char *end;
        *ret = strtoull(buf, &end, 10);
        return end == buf ? -EIO : 0;
}

int disk_pool_upper_usage(const struct disk_pool *p, const char *id, struct disk_pool_use *ret)
{
        uint64_t sid, rsv = 0;
        if (!name_ok(id))
                return -EINVAL;
        _cleanup_close_ int sub =
            openat(p->sandboxes_fd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (sub < 0)
                return -errno;
        int r = btrfs_subvol_id(sub, &sid);
        if (r < 0)
                return r;
        /* sysfs has the kernel's own figures, the limit at once and the data reserved by writes
         * not yet committed; the quota tree only what the last commit wrote */
        char dir[200];
        snprintf(dir, sizeof(dir), "%s/0_%" PRIu64, p->qgroups, sid);
        if (p->qgroups[0] && read_sysfs_u64(dir, "referenced", &ret->referenced) >= 0 &&
            read_sysfs_u64(dir, "exclusive", &ret->exclusive) >= 0 &&
            read_sysfs_u64(dir, "max_referenced", &ret->limit) >= 0) {
                if (read_sysfs_u64(dir, "rsv_data", &rsv) >= 0) {
                        ret->referenced += rsv;
                        ret->exclusive += rsv;
                }
                return 0;
        }
        return btrfs_qgroup_usage(p->root_fd, sid, &ret->referenced, &ret->exclusive, &ret->limit);
}
