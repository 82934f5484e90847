/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/volume-mount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "loop-util.h"
#include "macros.h"

#define VOLUME_MOUNT_ATTEMPTS 100 /* x VOLUME_MOUNT_RETRY_US: one second at most */
#define VOLUME_MOUNT_RETRY_US 10000

/* The /dev/loopN backed by the file (dev, ino), or -ENOENT. sysfs names each device's backing
 * file by path; the path is stat'ed and compared by identity, not by name. */
static int find_loop(dev_t dev, ino_t ino, char *ret_dev, size_t len)
{
        DIR *d = opendir("/sys/block");
        if (!d)
                return -errno;
        int r = -ENOENT;
        for (struct dirent *de; r == -ENOENT && (de = readdir(d));) {
                char path[512];
                if (strncmp(de->d_name, "loop", 4) != 0)
                        continue;
                snprintf(path, sizeof(path), "/sys/block/%s/loop/backing_file", de->d_name);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                _cleanup_free_ char *back = NULL;
                size_t n;
                if (read_all(fd, PATH_MAX, &back, &n) < 0 || n == 0)
                        continue;
                back[strcspn(back, "\n")] = 0;
                struct stat st;
                if (stat(back, &st) == 0 && st.st_dev == dev && st.st_ino == ino) {
                        snprintf(ret_dev, len, "/dev/%s", de->d_name);
                        r = 0;
                }
        }
        closedir(d);
        return r;
}

/* One try: the image's loop device, or a new one; mounted at mnt. */
static int mount_once(int img, const struct stat *st, const char *mnt)
{
        char dev[300];
        _cleanup_close_ int lfd = -EBADF;
        int r = find_loop(st->st_dev, st->st_ino, dev, sizeof(dev));
        if (r == -ENOENT)
                r = loop_attach(img, dev, sizeof(dev), &lfd); /* taking turns with jailers */
        if (r < 0)
                return r;
        /* Mounted, the file system holds the device and lfd may close (autoclear is left to
         * the last unmount); not mounted, closing lfd detaches it again. */
        if (mount(dev, mnt, "ext4", MS_NOSUID | MS_NODEV | MS_NOATIME, "errors=remount-ro") < 0)
                return -errno;
        return 0;
}

int volume_mount_image(const char *image, const char *mnt)
{
        _cleanup_close_ int img = open(image, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (img < 0)
                return -errno;
        struct stat st;
        if (fstat(img, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        /* A device found backing the image may be in its autoclear rundown after the last
         * unmount (sysfs still names its file; mounting it fails with EIO or ENXIO): retry
         * until it is gone and a fresh one is attached. */
        int r = -EIO;
        for (int i = 0; i < VOLUME_MOUNT_ATTEMPTS && r < 0; i++) {
                if (i > 0)
                        usleep(VOLUME_MOUNT_RETRY_US);
                r = mount_once(img, &st, mnt);
                if (r != -EIO && r != -ENXIO && r != -EBUSY && r != -ENODEV)
                        break;
        }
        if (r < 0)
                return r;
        if (mount(NULL, mnt, NULL, MS_PRIVATE, NULL) < 0) {
                r = -errno;
                (void)umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW);
                return r;
        }
        return 0;
}

int volume_umount(const char *mnt)
{
        if (!volume_is_mounted(mnt))
                return 0;
        if (umount2(mnt, UMOUNT_NOFOLLOW) == 0)
                return 0;
        if (errno != EBUSY)
                return errno == EINVAL ? 0 : -errno;
        /* a host process with a file open in it: it keeps its file, nobody new gets in */
        return umount2(mnt, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 ? -errno : 0;
}

bool volume_is_mounted(const char *mnt)
{
        char parent[PATH_MAX];
        struct stat a, b;
        if ((size_t)snprintf(parent, sizeof(parent), "%s/..", mnt) >= sizeof(parent))
                return false;
        if (lstat(mnt, &a) < 0 || !S_ISDIR(a.st_mode) || stat(parent, &b) < 0)
                return false;
        return a.st_dev != b.st_dev;
}
