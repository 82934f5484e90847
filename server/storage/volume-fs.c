/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/volume-fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "missing-syscalls.h"

#define RESOLVE_VOLUME (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)

int volume_fs_open_root(const char *mnt, int *ret_fd)
{
        int fd = open(mnt, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

/* openat2 below the volume's root; path is cleaned and absolute. */
static int open_in(int root, const char *path, int flags, mode_t mode)
{
        struct open_how how = {
            .flags = (uint64_t)(flags | O_CLOEXEC),
            .mode = (flags & O_CREAT) ? mode : 0,
            .resolve = RESOLVE_VOLUME,
        };
        const char *rel = path[1] ? path + 1 : ".";
        int fd;
        do
                fd = openat2(root, rel, &how, sizeof(how));
        while (fd < 0 && errno == EAGAIN); /* a rename raced the lookup: retry */
        return fd < 0 ? -errno : fd;
}

/* The parent dir of path (not "/") as a real dir fd, and the last component. */
static int open_parent(int root, const char *path, char *parent, size_t len, const char **ret_name)
{
        const char *slash = strrchr(path, '/');
        if (!slash || !slash[1] || (size_t)(slash - path) + 2 > len)
                return -EINVAL;
        if (slash == path)
                snprintf(parent, len, "/");
        else
                snprintf(parent, len, "%.*s", (int)(slash - path), path);
        *ret_name = slash + 1;
        return open_in(root, parent, O_RDONLY | O_DIRECTORY, 0);
}

/* ---- entries ---- */

static void iso_time(const struct timespec *ts, char buf[static 40])
{
        struct tm tm;
        time_t t = ts->tv_sec;
        gmtime_r(&t, &tm);
        size_t n = strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, 40 - n, ".%03ldZ", ts->tv_nsec / 1000000);
}

static const char *type_name(mode_t m)
{
        return S_ISREG(m) ? "file" : S_ISDIR(m) ? "directory" : S_ISLNK(m) ? "symlink" : "unknown";
}

/* VolumeEntryStat of st, found at path; link_dfd/link_name read a symlink's target. */
static cJSON *entry_json(const char *path, const struct stat *st, int link_dfd,
                         const char *link_name)
{
        char at[40], mt[40], ct[40];
        const char *slash = strrchr(path, '/');
        const char *name = slash && slash[1] ? slash + 1 : "/";
        cJSON *o = cJSON_CreateObject();
        iso_time(&st->st_atim, at);
        iso_time(&st->st_mtim, mt);
        iso_time(&st->st_ctim, ct);
        if (!o || !cJSON_AddStringToObject(o, "name", name) ||
            !cJSON_AddStringToObject(o, "type", type_name(st->st_mode)) ||
            !cJSON_AddStringToObject(o, "path", path) ||
            !cJSON_AddNumberToObject(o, "size", (double)st->st_size) ||
            !cJSON_AddNumberToObject(o, "mode", st->st_mode & 0777) ||
            !cJSON_AddNumberToObject(o, "uid", st->st_uid) ||
            !cJSON_AddNumberToObject(o, "gid", st->st_gid) ||
            !cJSON_AddStringToObject(o, "atime", at) || !cJSON_AddStringToObject(o, "mtime", mt) ||
            !cJSON_AddStringToObject(o, "ctime", ct)) {
                cJSON_Delete(o);
                return NULL;
        }
        if (S_ISLNK(st->st_mode) && link_dfd >= 0) {
                char target[PATH_MAX];
                ssize_t n = readlinkat(link_dfd, link_name, target, sizeof(target) - 1);
                if (n >= 0) {
                        target[n] = 0;
                        cJSON_AddStringToObject(o, "target", target);
                }
        }
        return o;
}

static int entry_of_fd(int fd, const char *path, cJSON **ret)
{
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        cJSON *o = entry_json(path, &st, -1, NULL);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

int volume_fs_stat(int root, const char *path, cJSON **ret)
{
        if (strcmp(path, "/") == 0) {
                _cleanup_close_ int fd = open_in(root, path, O_PATH | O_DIRECTORY, 0);
                return fd < 0 ? fd : entry_of_fd(fd, path, ret);
        }
        char parent[PATH_MAX];
        const char *name;
        _cleanup_close_ int pfd = open_parent(root, path, parent, sizeof(parent), &name);
        if (pfd < 0)
                return pfd == -ENOTDIR ? -ENOENT : pfd;
        struct stat st;
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        cJSON *o = entry_json(path, &st, pfd, name);
        if (!o)
                return -ENOMEM;
        *ret = o;
        return 0;
}

/* ---- listing ---- */

static int list_level(int dfd, const char *path, unsigned depth, cJSON *out)
{
        char **names = NULL;
        size_t n = 0;
        int r = dir_names_sorted(dfd, VOLUME_FS_LIST_MAX, NULL, &names, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                char child[PATH_MAX];
                struct stat st;
                if ((size_t)snprintf(child, sizeof(child), "%s/%s", strcmp(path, "/") ? path : "",
                                     names[i]) >= sizeof(child))
                        continue;
                if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* removed meanwhile */
                if (cJSON_GetArraySize(out) >= VOLUME_FS_LIST_MAX) {
                        r = -ERANGE;
                        break;
                }
                cJSON *e = entry_json(child, &st, dfd, names[i]);
                if (!e) {
                        r = -ENOMEM;
                        break;
                }
                cJSON_AddItemToArray(out, e);
                if (S_ISDIR(st.st_mode) && depth > 1) {
                        _cleanup_close_ int sub =
                            openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                r = list_level(sub, child, depth - 1, out);
                }
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return r;
}

int volume_fs_list(int root, const char *path, unsigned depth, cJSON **ret)
{
        _cleanup_close_ int dfd = open_in(root, path, O_RDONLY | O_DIRECTORY, 0);
        if (dfd < 0)
                return dfd;
        cJSON *out = cJSON_CreateArray();
        if (!out)
                return -ENOMEM;
        int r = list_level(dfd, path, depth, out);
        if (r < 0) {
                cJSON_Delete(out);
                return r;
        }
        *ret = out;
        return 0;
}

/* ---- creating ---- */

static int set_attrs(int fd, const struct volume_fs_attrs *a, mode_t def_mode)
{
        uid_t uid = a && a->has_uid ? a->uid : VOLUME_FS_DEFAULT_OWNER;
        gid_t gid = a && a->has_gid ? a->gid : VOLUME_FS_DEFAULT_OWNER;
        mode_t mode = a && a->has_mode ? a->mode : def_mode;
        /* fchown first: it clears set-id bits that fchmod then sets as asked */
        if (fchown(fd, uid, gid) < 0 || fchmod(fd, mode) < 0)
                return -errno;
        return 0;
}

/* mkdir name in dfd owned and moded by a (defaults def_mode); -EEXIST when it exists. */
static int make_dir_at(int dfd, const char *name, const struct volume_fs_attrs *a, mode_t def_mode)
{
        if (mkdirat(dfd, name, 0700) < 0)
                return -errno;
        /* through an fd opened without following: a symlink swapped in meanwhile is refused */
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return set_attrs(fd, a, def_mode);
}

/* Every missing dir of path (cleaned, absolute), E2B's ensureDirs: the owner of a, mode 0777. */
static int make_parents(int root, const char *path, const struct volume_fs_attrs *a)
{
        struct volume_fs_attrs pa = {0};
        if (a) {
                pa = *a;
                pa.has_mode = false;
        }
        char prefix[PATH_MAX];
        for (const char *p = path + 1; *p;) {
                size_t n = strcspn(p, "/");
                snprintf(prefix, sizeof(prefix), "%.*s", (int)(p + n - path), path);
                int fd = open_in(root, prefix, O_PATH | O_DIRECTORY, 0);
                if (fd == -ENOENT) {
                        char parent[PATH_MAX];
                        const char *name;
                        _cleanup_close_ int pfd =
                            open_parent(root, prefix, parent, sizeof(parent), &name);
                        if (pfd < 0)
                                return pfd;
                        int r = make_dir_at(pfd, name, &pa, VOLUME_FS_DIR_MODE);
                        if (r < 0 && r != -EEXIST)
                                return r;
                } else if (fd < 0) {
                        return fd;
                } else {
                        close(fd);
                }
                p += n;
                if (*p == '/')
                        p++;
        }
        return 0;
}

int volume_fs_mkdir(int root, const char *path, const struct volume_fs_attrs *a, bool parents,
                    cJSON **ret)
{
        if (strcmp(path, "/") == 0)
                return parents ? volume_fs_stat(root, path, ret) : -EEXIST;
        char parent[PATH_MAX];
        const char *name;
        int r;
        if (parents) {
                snprintf(parent, sizeof(parent), "%s", path);
                *strrchr(parent, '/') = 0;
                if (parent[0] && (r = make_parents(root, parent, a)) < 0)
                        return r;
        }
        _cleanup_close_ int pfd = open_parent(root, path, parent, sizeof(parent), &name);
        if (pfd < 0)
                return pfd;
        r = make_dir_at(pfd, name, a, VOLUME_FS_DIR_MODE);
        if (r == -EEXIST && parents) {
                _cleanup_close_ int fd =
                    openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -EEXIST; /* a file (or a link) of that name */
                return entry_of_fd(fd, path, ret);
        }
        if (r < 0)
                return r;
        return volume_fs_stat(root, path, ret);
}

int volume_fs_open_write(int root, const char *path, const struct volume_fs_attrs *a, bool force,
                         int *ret_fd)
{
        if (strcmp(path, "/") == 0)
                return -EISDIR;
        if (force) {
                char parent[PATH_MAX];
                snprintf(parent, sizeof(parent), "%s", path);
                *strrchr(parent, '/') = 0;
                int r = parent[0] ? make_parents(root, parent, a) : 0;
                if (r < 0)
                        return r;
        }
        mode_t mode = a && a->has_mode ? a->mode & 0777 : VOLUME_FS_FILE_MODE;
        int flags = O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY | (force ? O_TRUNC : O_EXCL);
        _cleanup_close_ int fd = open_in(root, path, flags, mode);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if (fd_set_nonblock(fd, 0) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int volume_fs_finish_write(int fd, const char *path, const struct volume_fs_attrs *a, cJSON **ret)
{
        if (fsync(fd) < 0)
                return -errno;
        int r = set_attrs(fd, a, VOLUME_FS_FILE_MODE);
        return r < 0 ? r : entry_of_fd(fd, path, ret);
}

int volume_fs_open_read(int root, const char *path, int *ret_fd, uint64_t *ret_size)
{
        _cleanup_close_ int fd = open_in(root, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISDIR(st.st_mode))
                return -EISDIR;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        *ret_size = (uint64_t)st.st_size;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int volume_fs_remove(int root, const char *path)
{
        if (strcmp(path, "/") == 0)
                return -EPERM;
        char parent[PATH_MAX];
        const char *name;
        _cleanup_close_ int pfd = open_parent(root, path, parent, sizeof(parent), &name);
        if (pfd < 0)
                return pfd == -ENOTDIR ? -ENOENT : pfd;
        return rm_rf_at(pfd, name);
}

int volume_fs_update(int root, const char *path, const struct volume_fs_attrs *a, cJSON **ret)
{
        _cleanup_close_ int fd = open_in(root, path, O_PATH, 0);
        if (fd < 0)
                return fd;
        if (a->has_mode) {
                /* an O_PATH fd cannot fchmod; its /proc/self/fd link names exactly this inode */
                char proc[64];
                snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
                if (chmod(proc, a->mode) < 0)
                        return -errno;
        }
        if ((a->has_uid || a->has_gid) &&
            fchownat(fd, "", a->has_uid ? a->uid : (uid_t)-1, a->has_gid ? a->gid : (gid_t)-1,
                     AT_EMPTY_PATH) < 0)
                return -errno;
        return entry_of_fd(fd, path, ret);
}
