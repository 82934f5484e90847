/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/layer-export.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fd-util.h"
#include "macros.h"
#include "storage/layer-store.h"
#include "storage/layer-walk.h"

#define EXPORT_CHUNK     (64 * 1024)
#define EXPORT_MAX_LINKS 65536 /* multiply-linked files remembered; more are sent again */
#define WH_PREFIX        ".wh."
#define WH_OPAQUE        ".wh..wh..opq"

struct linked {
        dev_t dev;
        ino_t ino;
        char *path;
};

struct exporter {
        struct archive *a;
        struct archive_entry *e;
        struct linked *links;
        size_t n_links, cap_links;
        char *buf; /* EXPORT_CHUNK, then the xattr names and one value */
        int err;   /* first -errno of a write */
};

#define XNAMES_MAX (64 * 1024)
#define XVALUE_MAX (64 * 1024)

static int write_fail(struct exporter *x)
{
        int e = archive_errno(x->a);
        return x->err ? x->err : e > 0 ? -e : -EIO;
}

/* Multiply-linked files sent so far: an open-addressing table on (dev, ino), a power of two
 * in size, at most half full (a layer from a template's dir has every file linked). */
static size_t link_slot(const struct linked *t, size_t cap, dev_t dev, ino_t ino)
{
        size_t i = (size_t)((ino ^ ((uint64_t)dev << 32)) * 0x9E3779B97F4A7C15ULL) & (cap - 1);
        while (t[i].path && (t[i].ino != ino || t[i].dev != dev))
                i = (i + 1) & (cap - 1);
        return i;
}

static const char *link_find(const struct exporter *x, const struct stat *st)
{
        return x->cap_links
                   ? x->links[link_slot(x->links, x->cap_links, st->st_dev, st->st_ino)].path
                   : NULL;
}

static void link_add(struct exporter *x, const struct stat *st, const char *path)
{
        if (x->n_links >= EXPORT_MAX_LINKS)
                return; /* not remembered: its other names are sent as files */
        if (2 * (x->n_links + 1) > x->cap_links) {
                size_t cap = MAX(x->cap_links * 2, (size_t)64);
                struct linked *t = calloc(cap, sizeof(*t));
                if (!t)
                        return;
                for (size_t i = 0; i < x->cap_links; i++)
                        if (x->links[i].path)
                                t[link_slot(t, cap, x->links[i].dev, x->links[i].ino)] =
                                    x->links[i];
                free(x->links);
                x->links = t;
                x->cap_links = cap;
        }
        char *p = strdup(path);
        if (p) {
                x->links[link_slot(x->links, x->cap_links, st->st_dev, st->st_ino)] =
                    (struct linked){st->st_dev, st->st_ino, p};
                x->n_links++;
        }
}

static void set_xattrs(struct exporter *x, int fd)
{
        char *names = x->buf + EXPORT_CHUNK, *value = names + XNAMES_MAX;
        ssize_t n = flistxattr(fd, names, XNAMES_MAX);
        for (ssize_t off = 0; n > 0 && off < n; off += (ssize_t)strlen(names + off) + 1) {
                const char *name = names + off;
                if (strncmp(name, "user.", 5) != 0 || strncmp(name, "user.overlay.", 13) == 0)
                        continue;
                ssize_t k = fgetxattr(fd, name, value, XVALUE_MAX);
                if (k >= 0)
                        archive_entry_xattr_add_entry(x->e, name, value, (size_t)k);
        }
}

static void head(struct exporter *x, const char *path, const struct stat *st)
{
        archive_entry_clear(x->e);
        archive_entry_set_pathname(x->e, path);
        archive_entry_set_mode(x->e, st->st_mode);
        archive_entry_set_uid(x->e, st->st_uid);
        archive_entry_set_gid(x->e, st->st_gid);
        archive_entry_set_mtime(x->e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
}

static int put_header(struct exporter *x)
{
        /* names are bytes (hdrcharset=BINARY): a warning about them is not a failure */
        int k = archive_write_header(x->a, x->e);
        return k == ARCHIVE_OK || k == ARCHIVE_WARN ? 0 : write_fail(x);
}

/* An empty regular entry named path (a whiteout or the opaque mark). */
static int put_marker(struct exporter *x, const char *path)
{
        struct stat st = {.st_mode = S_IFREG | 0000};
        head(x, path, &st);
        archive_entry_set_size(x->e, 0);
        return put_header(x);
}

static int put_data(struct exporter *x, int fd, off_t from, off_t len)
{
        while (len > 0) {
                size_t want = (size_t)MIN(len, (off_t)EXPORT_CHUNK);
                ssize_t k = pread(fd, x->buf, want, from);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return k < 0 ? -errno : -ESTALE;
                if (archive_write_data(x->a, x->buf, (size_t)k) != k)
                        return write_fail(x);
                from += k;
                len -= k;
        }
        return 0;
}

static int put_zeros(struct exporter *x, off_t len)
{
        static const char zeros[EXPORT_CHUNK];
        while (len > 0) {
                size_t n = (size_t)MIN(len, (off_t)EXPORT_CHUNK);
                if (archive_write_data(x->a, zeros, n) != (la_ssize_t)n)
                        return write_fail(x);
                len -= (off_t)n;
        }
        return 0;
}

/* A regular file: its data regions as pax sparse entries when it has holes. */
static int put_file(struct exporter *x, int fd, const char *path, const struct stat *st)
{
        head(x, path, st);
        archive_entry_set_size(x->e, st->st_size);
        set_xattrs(x, fd);
        bool sparse = false;
        off_t pos = 0, data_total = 0;
        while (pos < st->st_size) {
                off_t d = lseek(fd, pos, SEEK_DATA);
                if (d < 0)
                        break; /* ENXIO: the rest is a hole; else no SEEK_DATA: dense */
                off_t h = lseek(fd, d, SEEK_HOLE);
                if (h < 0 || h > st->st_size)
                        h = st->st_size;
                if (d > pos || h < st->st_size)
                        sparse = true;
                archive_entry_sparse_add_entry(x->e, d, h - d);
                data_total += h - d;
                pos = h;
        }
        if (data_total < st->st_size && pos < st->st_size)
                sparse = true;
        if (!sparse)
                archive_entry_sparse_clear(x->e);
        else if (data_total == 0) /* all hole: one byte of it as data keeps the entry sparse */
                archive_entry_sparse_add_entry(x->e, st->st_size - 1, 1);
        int r = put_header(x);
        if (r < 0)
                return r;
        if (!sparse)
                return put_data(x, fd, 0, st->st_size);
        /* the pax writer takes every byte in order and drops those of the holes it was
         * told of: holes are fed as zeros from memory, never read */
        for (pos = 0; pos < st->st_size;) {
                off_t d = lseek(fd, pos, SEEK_DATA);
                if (d < 0 || d > st->st_size)
                        d = st->st_size;
                off_t h = d < st->st_size ? lseek(fd, d, SEEK_HOLE) : st->st_size;
                if (h < 0 || h > st->st_size)
                        h = st->st_size;
                if (data_total == 0 && d == st->st_size)
                        d = st->st_size - 1; /* the one byte sent as data */
                if ((r = put_zeros(x, d - pos)) < 0 ||
                    (r = data_total == 0 ? put_zeros(x, 1) : put_data(x, fd, d, h - d)) < 0)
                        return r;
                pos = data_total == 0 ? st->st_size : h;
        }
        return 0;
}

static int export_dir(struct exporter *x, int dfd, const char *path, int depth);

static int export_entry(struct exporter *x, int dfd, const char *name, const char *path, int depth)
{
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
                char wh[PATH_MAX];
                const char *slash = strrchr(path, '/');
                size_t dl = slash ? (size_t)(slash - path + 1) : 0;
                if ((size_t)snprintf(wh, sizeof(wh), "%.*s" WH_PREFIX "%s", (int)dl, path, name) >=
                    sizeof(wh))
                        return -ENAMETOOLONG;
                return put_marker(x, wh);
        }
        if (S_ISLNK(st.st_mode)) {
                char target[PATH_MAX];
                ssize_t k = readlinkat(dfd, name, target, sizeof(target) - 1);
                if (k < 0)
                        return -errno;
                target[k] = 0;
                head(x, path, &st);
                archive_entry_set_symlink(x->e, target);
                return put_header(x);
        }
        if (S_ISFIFO(st.st_mode)) {
                head(x, path, &st);
                return put_header(x);
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return 0; /* never in a layer */
        int flags = S_ISDIR(st.st_mode) ? O_DIRECTORY : O_NOCTTY | O_NONBLOCK;
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | flags);
        if (fd < 0)
                return -errno;
        if (S_ISREG(st.st_mode)) {
                const char *first = st.st_nlink > 1 ? link_find(x, &st) : NULL;
                if (first) {
                        head(x, path, &st);
                        archive_entry_set_hardlink(x->e, first);
                        archive_entry_set_size(x->e, 0);
                        return put_header(x);
                }
                int r = put_file(x, fd, path, &st);
                if (r >= 0 && st.st_nlink > 1)
                        link_add(x, &st, path);
                return r;
        }
        head(x, path, &st);
        set_xattrs(x, fd);
        int r = put_header(x);
        char v[8], mark[PATH_MAX];
        if (r >= 0 && fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v)) > 0) {
                if ((size_t)snprintf(mark, sizeof(mark), "%s/" WH_OPAQUE, path) >= sizeof(mark))
                        return -ENAMETOOLONG;
                r = put_marker(x, mark);
        }
        return r < 0 ? r : export_dir(x, fd, path, depth + 1);
}

static int export_dir(struct exporter *x, int dfd, const char *path, int depth)
{
        if (depth > WALK_MAX_DEPTH)
                return -ELOOP;
        char **names = NULL;
        size_t n = 0;
        int r = layer_walk_list_dir(dfd, &names, &n);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                char sub[PATH_MAX];
                if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "/" : "",
                                     names[i]) >= sizeof(sub))
                        r = -ENAMETOOLONG;
                else
                        r = export_entry(x, dfd, names[i], sub, depth);
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return r;
}

int layer_export(const char *state, const char *hex, int fd)
{
        char path[4096];
        struct stat st;
        if (layer_store_has(state, hex) != 1)
                return -ENOENT;
        layer_store_path(state, hex, path, sizeof(path));
        _cleanup_close_ int root = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (root < 0 || fstat(root, &st) < 0)
                return -errno;
        struct exporter x = {.a = archive_write_new(), .e = archive_entry_new()};
        x.buf = malloc(EXPORT_CHUNK + XNAMES_MAX + XVALUE_MAX);
        int r = -ENOMEM;
        if (!x.a || !x.e || !x.buf)
                goto out;
        if (archive_write_set_format_pax(x.a) != ARCHIVE_OK ||
            archive_write_set_format_option(x.a, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK ||
            archive_write_set_bytes_per_block(x.a, EXPORT_CHUNK) != ARCHIVE_OK ||
            archive_write_open_fd(x.a, fd) != ARCHIVE_OK) {
                r = write_fail(&x);
                goto out;
        }
        head(&x, ".", &st);
        set_xattrs(&x, root);
        r = put_header(&x);
        if (r >= 0)
                r = export_dir(&x, root, "", 0);
        if (r >= 0 && archive_write_close(x.a) != ARCHIVE_OK)
                r = write_fail(&x);
out:
        for (size_t i = 0; i < x.cap_links; i++)
                free(x.links[i].path);
        free(x.links);
        free(x.buf);
        if (x.e)
                archive_entry_free(x.e);
        if (x.a)
                archive_write_free(x.a);
        return r;
}

int layer_import_stream(const char *state, int fd, const char *want_hex,
                        char err[static IMAGE_LAYER_ERR_MAX])
{
        char tmp[4096], got[LAYER_ID_MAX];
        err[0] = 0;
        int r = layer_store_has(state, want_hex);
        if (r != 0) {
                if (r < 0)
                        snprintf(err, IMAGE_LAYER_ERR_MAX, "not a layer id");
                return r < 0 ? r : 0;
        }
        r = layer_store_tmp_dir(state, tmp, sizeof(tmp));
        if (r < 0)
                return r;
        _cleanup_close_ int root = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct archive *a = archive_read_new();
        struct image_layer_stats stats = {};
        if (root < 0)
                r = -errno;
        else if (!a)
                r = -ENOMEM;
        else if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
                 archive_read_open_fd(a, fd, EXPORT_CHUNK) != ARCHIVE_OK) {
                snprintf(err, IMAGE_LAYER_ERR_MAX, "the layer stream is not a tar: %s",
                         archive_error_string(a) ? archive_error_string(a) : "?");
                r = -EINVAL;
        } else
                r = image_layer_extract(a, root, NULL, NULL, &stats, err);
        if (a)
                archive_read_free(a);
        if (r >= 0) {
                r = layer_store_adopt_verified(state, tmp, want_hex, got);
                if (r == -EBADMSG)
                        snprintf(err, IMAGE_LAYER_ERR_MAX,
                                 "the layer received hashes to sha256:%.64s, not sha256:%.64s", got,
                                 want_hex);
        }
        if (r < 0)
                rm_rf(tmp);
        return r;
}
