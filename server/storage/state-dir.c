/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/state-dir.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "log.h"
#include "macros.h"

static bool held; /* the lock is ours: so is the mount */

static int mkdir_p(const char *path, mode_t mode)
{
        char buf[4096];
        if ((size_t)snprintf(buf, sizeof(buf), "%s", path) >= sizeof(buf))
                return -ENAMETOOLONG;
        for (char *p = buf + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                                return -errno;
                        *p = '/';
                }
        if (mkdir(buf, mode) < 0) {
                if (errno != EEXIST)
                        return -errno;
                return 0;
        }
        return 1;
}

int state_dir_is_protected(const char *path)
{
        struct statvfs sv;
        if (statvfs(path, &sv) < 0)
                return -errno;
        return (sv.f_flag & ST_NOSUID) && (sv.f_flag & ST_NODEV);
}

/* Bind dir onto itself (with whatever is mounted below it: sandboxes' disks), then make that
 * mount nosuid,nodev (a bind mount takes new flags only on a remount). Kept private so that
 * nothing mounted below propagates elsewhere. One mount for the whole dir: layers/ is filled
 * by hard links from templates/, which link(2) cannot do across mounts. */
static int protect(const char *dir)
{
        int r = state_dir_is_protected(dir);
        if (r != 0)
                return r < 0 ? r : 0; /* already (an earlier run's mount, or a nosuid fs) */
        if (mount(dir, dir, NULL, MS_BIND | MS_REC, NULL) < 0)
                return -errno;
        if (mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL) < 0 ||
            mount(NULL, dir, NULL, MS_PRIVATE, NULL) < 0) {
                r = -errno;
                (void)umount2(dir, MNT_DETACH);
                return r;
        }
        return 0;
}

int state_dir_setup(const char *state)
{
        char path[4096];
        int r = mkdir_p(state, 0700);
        if (r < 0)
                return log_error_errno(r, "creating state dir %s: %m", state);
        if (r > 0)
                log_info("created state dir %s", state);
        /* It holds the API keys and every sandbox's token: owner only, always. */
        if (chmod(state, 0700) < 0)
                return log_error_errno(errno, "chmod 0700 %s: %m", state);
        static const char *const subdirs[] = {"sandboxes", "templates", "layers"};
        for (size_t i = 0; i < ELEMENTSOF(subdirs); i++) {
                snprintf(path, sizeof(path), "%s/%s", state, subdirs[i]);
                if (mkdir(path, 0700) < 0 && errno != EEXIST)
                        return log_error_errno(errno, "creating %s: %m", path);
        }
        /* One sbxd per state dir: a second one would tear down the first one's sandboxes. */
        snprintf(path, sizeof(path), "%s/sbxd.lock", state);
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return log_error_errno(errno, "opening %s: %m", path);
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                r = log_error_errno(errno, "%s is in use by another sbxd: %m", state);
                safe_close(fd);
                return r;
        }
        /* fd stays open (and locked) for sbxd's lifetime */
        held = true;
        r = protect(state);
        if (r < 0)
                return log_error_errno(r, "mounting %s nosuid,nodev: %m", state);
        return 0;
}

/* How path is mounted: *ret_bind when the topmost mount at path is a bind of a subtree
 * (mountinfo's root field is not "/": the mount protect() makes, never a file system an
 * operator mounted there), *ret_below when something is mounted under path. */
static int mount_state(const char *path, bool *ret_bind, bool *ret_below)
{
        char real[PATH_MAX], line[8192];
        *ret_bind = *ret_below = false;
        if (!realpath(path, real))
                return -errno;
        size_t rl = strlen(real);
        FILE *f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                char root[4096], point[4096];
                /* "id parent major:minor root mount-point ..." */
                if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) != 2)
                        continue;
                if (strcmp(point, real) == 0)
                        *ret_bind = strcmp(root, "/") != 0; /* the last one is on top */
                else if (strncmp(point, real, rl) == 0 && point[rl] == '/')
                        *ret_below = true;
        }
        fclose(f);
        return 0;
}

void state_dir_release(const char *state)
{
        bool bind, below;
        if (!held || state_dir_is_protected(state) != 1 || mount_state(state, &bind, &below) < 0 ||
            !bind)
                return;
        /* Sandboxes still running have their disks mounted below: detaching would take those
         * along. The mount stays for the next sbxd, which finds it. */
        if (below)
                return;
        if (umount2(state, MNT_DETACH) < 0)
                log_warning_errno(errno, "detaching %s: %m", state);
}
