/* SPDX-License-Identifier: Apache-2.0 */
#include "fd-util.h"
#include "macros.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int write_full(int fd, const void *buf, size_t len)
{
        const char *p = buf;
        int is_socket = -1;
        while (len > 0) {
                ssize_t n;
                if (is_socket != 0) {
                        n = send(fd, p, len, MSG_NOSIGNAL);
                        if (n < 0 && errno == ENOTSOCK) {
                                is_socket = 0;
                                continue;
                        }
                        is_socket = 1;
                } else {
                        n = write(fd, p, len);
                }
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

int send_all_wait(int fd, const void *buf, size_t len, int timeout_ms)
{
        const char *d = buf;
        while (len > 0) {
                ssize_t k = send(fd, d, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (k > 0) {
                        d += k;
                        len -= (size_t)k;
                        continue;
                }
                if (k < 0 && errno == EINTR)
                        continue;
                if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
                        return k == 0 ? -EPIPE : -errno;
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                int n = poll(&p, 1, timeout_ms);
                if (n == 0)
                        return -ETIMEDOUT;
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
        return 0;
}

int read_exact(int fd, void *buf, size_t len)
{
        char *p = buf;
        size_t got = 0;
        while (got < len) {
                ssize_t n = read(fd, p + got, len - got);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return got == 0 ? -EPIPE : -EPROTO;
                got += (size_t)n;
        }
        return 0;
}

int read_all(int fd, size_t max, char **ret_buf, size_t *ret_len)
{
        size_t cap = 4096, len = 0;
        _cleanup_free_ char *buf = malloc(cap + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len == cap) {
                        if (cap >= max)
                                return -EFBIG;
                        cap = MIN(cap * 2, max);
                        char *nb = realloc(buf, cap + 1);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = 0;
        if (ret_len)
                *ret_len = len;
        *ret_buf = TAKE_PTR(buf);
        return 0;
}

int write_file(const char *path, const char *value)
{
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return write_full(fd, value, strlen(value));
}

int fd_set_nonblock(int fd, int on)
{
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0)
                return -errno;
        int nfl = on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK);
        if (nfl != fl && fcntl(fd, F_SETFL, nfl) < 0)
                return -errno;
        return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
        char tmp[4096], dir[4096];
        const char *slash = strrchr(path, '/');
        size_t dlen = slash ? (size_t)(slash - path) : 0;
        /* The thread id keeps concurrent writers of one path (two API calls) apart. */
        if ((size_t)snprintf(tmp, sizeof(tmp), "%.*s%s.%s.%d.tmp", (int)dlen, path,
                             slash ? "/" : "", slash ? slash + 1 : path,
                             (int)gettid()) >= sizeof(tmp) ||
            dlen >= sizeof(dir))
                return -ENAMETOOLONG;
        if (slash)
                snprintf(dir, sizeof(dir), "%.*s", (int)(dlen ? dlen : 1), path);
        else
                snprintf(dir, sizeof(dir), ".");
        _cleanup_close_ int fd =
            open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
        if (fd < 0)
                return -errno;
        int r = write_full(fd, data, len);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlink(tmp);
                return r;
        }
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0 || fsync(dfd) < 0)
                return -errno; /* renamed, but not known to be durable */
        return 0;
}

DIR *opendir_fd(int dfd)
{
        _cleanup_close_ int dup = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        if (dup < 0)
                return NULL;
        DIR *d = fdopendir(dup);
        if (!d)
                return NULL;
        TAKE_FD(dup);
        rewinddir(d); /* the description is shared: start at the beginning whatever read it */
        return d;
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int dir_names_sorted(int dfd, size_t max, bool (*keep)(const char *name), char ***ret,
                     size_t *ret_n)
{
        DIR *d = opendir_fd(dfd);
        if (!d)
                return -errno;
        char **v = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        int r = 0;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    (keep && !keep(de->d_name)))
                        continue;
                if (n == max) {
                        r = -ERANGE;
                        break;
                }
                if (n + 2 > cap) { /* the name and the NULL after it */
                        cap = MAX(cap * 2, (size_t)16);
                        char **nv = realloc(v, cap * sizeof(*v));
                        if (!nv) {
                                r = -ENOMEM;
                                break;
                        }
                        v = nv;
                }
                if (!(v[n] = strdup(de->d_name))) {
                        r = -ENOMEM;
                        break;
                }
                n++;
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
        v[n] = NULL;
        qsort(v, n, sizeof(*v), cmp_names);
        *ret = v;
        *ret_n = n;
        return 0;
}

/* One removal: the directory it empties (root), its file system, and the subtrees it moved
 * up to root's own level because they were deeper than it holds open at once. */
struct rm_rf {
        int root;
        dev_t dev;
        unsigned hold;  /* levels below root held open at once, deeper ones are moved up */
        unsigned names; /* the next name a moved subtree gets */
        unsigned moved; /* subtrees moved up so far */
};

/* Move dir name of dfd, too deep to enter now, into the root under a name of its own: the root
 * loop takes it from there. 0, or -errno (left in place). */
static int rm_rf_move_up(struct rm_rf *x, int dfd, const char *name)
{
        for (unsigned tries = 0; tries < 64; tries++) {
                char tmp[32];
                snprintf(tmp, sizeof(tmp), ".sbx-rm.%u", x->names++);
                if (renameat2(dfd, name, x->root, tmp, RENAME_NOREPLACE) == 0) {
                        x->moved++;
                        return 0;
                }
                if (errno != EEXIST)
                        return -errno;
        }
        return -EEXIST;
}

/* Everything in directory dfd, depth levels below the root; a directory more than max levels
 * down is left (-ELOOP). Never more than x->hold levels open: a tree of any depth (a sandbox
 * can make one a million levels deep) costs a bounded number of descriptors and stack. */
static int rm_rf_children(struct rm_rf *x, int dfd, unsigned depth, unsigned max)
{
        DIR *d = opendir_fd(dfd);
        if (!d)
                return -errno;
        int ret = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                struct stat st;
                if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISDIR(st.st_mode)) {
                        int r = 0;
                        if (st.st_dev != x->dev) /* a mount point: never descend, leave it */
                                r = -EBUSY;
                        else if (depth >= max) /* too deep: left in place (reported) */
                                r = -ELOOP;
                        else if (depth >= x->hold) { /* taken from the root's level later */
                                r = rm_rf_move_up(x, dfd, de->d_name);
                                if (r == 0)
                                        continue;
                        } else {
                                _cleanup_close_ int sub =
                                    openat(dfd, de->d_name,
                                           O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                r = sub < 0 ? -errno : rm_rf_children(x, sub, depth + 1, max);
                                if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) < 0 && r == 0)
                                        r = -errno;
                        }
                        if (r < 0 && !ret)
                                ret = r;
                } else if (unlinkat(dfd, de->d_name, 0) < 0 && errno != ENOENT && !ret) {
                        ret = -errno;
                }
        }
        closedir(d);
        return ret;
}

/* Everything in the open directory root (on dev), in passes until no pass moved a subtree up:
 * a bounded depth is held open whole (its bound keeps it small); an unbounded one holds
 * RM_RF_HOLD levels and moves what lies deeper up to root. The first error, or 0. */
static int rm_rf_tree(int root, dev_t dev, unsigned max_depth)
{
        struct rm_rf x = {
            .root = root, .dev = dev, .hold = max_depth == UINT_MAX ? RM_RF_HOLD : UINT_MAX};
        int r = 0;
        unsigned before;
        do {
                before = x.moved;
                int k = rm_rf_children(&x, root, 0, max_depth);
                if (k < 0 && r == 0)
                        r = k;
        } while (x.moved != before);
        return r;
}

int rm_rf_at(int dfd, const char *name)
{
        return rm_rf_at_depth(dfd, name, UINT_MAX);
}

int rm_rf_at_depth(int dfd, const char *name, unsigned max_depth)
{
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return unlinkat(dfd, name, 0) < 0 ? -errno : 0;
        _cleanup_close_ int sub =
            openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
                return -errno;
        int r = rm_rf_tree(sub, st.st_dev, max_depth);
        if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && r == 0)
                r = -errno;
        return r;
}

int rm_rf(const char *path)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno == ENOTDIR || errno == ELOOP)
                        return unlink(path) < 0 ? -errno : 0;
                return -errno;
        }
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        int r = rm_rf_tree(fd, st.st_dev, UINT_MAX);
        if (rmdir(path) < 0 && r == 0)
                r = -errno;
        return r;
}
