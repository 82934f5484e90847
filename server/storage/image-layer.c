/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/image-layer.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fd-util.h"
#include "format-util.h"
#include "macros.h"
#include "missing-syscalls.h"
#include "storage/image-admit.h"

#define OPAQUE_XATTR  "trusted.overlay.opaque"
#define WH_PREFIX     ".wh."
#define WH_OPAQUE     ".wh..wh..opq"
#define WH_META       ".wh..wh."
#define ID_OVERFLOW   65534u
#define ID_MAX_MAPPED 65535u

struct ctx {
        int root;
        struct image_layer_stats *st;
        char *err;
        struct image_admission *adm; /* may be NULL */
        const char *what;            /* the layer, for admission's messages */
        uint64_t admitted;           /* what the layer was charged so far */
};

/* Count bytes of the layer before they are written (storage/image-admit.h). */
static int admit(struct ctx *c, uint64_t bytes)
{
        char msg[IMAGE_ADMIT_ERR_MAX];
        int r = image_admit_charge(c->adm, &c->admitted, bytes, c->what, msg);
        if (r < 0)
                snprintf(c->err, IMAGE_LAYER_ERR_MAX, "%s", msg);
        return r;
}

_printf_(2, 3) static int refuse(struct ctx *c, const char *fmt, ...)
{
        (void)FORMAT_VARARGS(c->err, IMAGE_LAYER_ERR_MAX, fmt);
        return -EINVAL;
}

struct path {
        char buf[PATH_MAX];
        const char *comp[IMAGE_LAYER_MAX_DEPTH];
        size_t n;
};

/* raw → its components: "./" prefixes and "." components dropped; absolute paths, ".." and
 * over-long or over-deep paths refused. n == 0 is the layer's root. */
static int path_parse(struct ctx *c, const char *raw, struct path *p)
{
        if (!raw)
                return refuse(c, "an entry has no path");
        if (raw[0] == '/')
                return refuse(c,
                              "'%.200s': absolute paths are refused: the path would escape "
                              "the layer",
                              raw);
        if (strlen(raw) >= sizeof(p->buf))
                return refuse(c, "'%.200s…': path longer than %d bytes", raw, PATH_MAX - 1);
        strcpy(p->buf, raw);
        p->n = 0;
        for (char *s = p->buf, *tok; (tok = strsep(&s, "/"));) {
                if (!*tok || strcmp(tok, ".") == 0)
                        continue;
                if (strcmp(tok, "..") == 0)
                        return refuse(c,
                                      "'%.200s': '..' is refused: the path would escape the "
                                      "layer",
                                      raw);
                if (p->n == IMAGE_LAYER_MAX_DEPTH)
                        return refuse(c, "'%.200s': deeper than %u components", raw,
                                      IMAGE_LAYER_MAX_DEPTH);
                p->comp[p->n++] = tok;
        }
        return 0;
}

/* The directory holding the first n components of p, opened O_RDONLY|O_DIRECTORY, one
 * component at a time and never through a symlink, a mount or "..". Missing directories are
 * made (0755, root) when create. */
static int open_dir(struct ctx *c, const char *raw, const struct path *p, size_t n, bool create,
                    int *ret)
{
        _cleanup_close_ int fd = fcntl(c->root, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        for (size_t i = 0; i < n; i++) {
                struct open_how how = {
                    .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                               RESOLVE_NO_XDEV,
                };
                int sub = openat2(fd, p->comp[i], &how, sizeof(how));
                if (sub < 0 && errno == ENOENT && create) {
                        if (mkdirat(fd, p->comp[i], 0755) < 0 && errno != EEXIST)
                                return -errno;
                        sub = openat2(fd, p->comp[i], &how, sizeof(how));
                }
                if (sub < 0 && (errno == ELOOP || errno == ENOTDIR || errno == EXDEV)) {
                        struct stat st;
                        bool link = errno == ELOOP ||
                                    (fstatat(fd, p->comp[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                                     S_ISLNK(st.st_mode));
                        return refuse(c,
                                      "'%.200s': goes through '%.100s', which is %s in the "
                                      "layer: the path would escape it",
                                      raw, p->comp[i], link ? "a symlink" : "not a directory");
                }
                if (sub < 0)
                        return -errno;
                safe_close(fd);
                fd = sub;
        }
        *ret = TAKE_FD(fd);
        return 0;
}

/* Whatever the layer has at dir/name goes (a later entry of the same path replaces it). */
static int remove_at(int dir, const char *name, bool keep_dir)
{
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (keep_dir && S_ISDIR(st.st_mode))
                return 0;
        return rm_rf_at_depth(dir, name, IMAGE_LAYER_MAX_DEPTH);
}

static unsigned map_id(int64_t id)
{
        return id < 0 || id > ID_MAX_MAPPED ? ID_OVERFLOW : (unsigned)id;
}

static int set_xattrs(struct ctx *c, struct archive_entry *e, int fd)
{
        const char *name;
        const void *value;
        size_t size;
        archive_entry_xattr_reset(e);
        while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
                bool keep =
                    (strncmp(name, "user.", 5) == 0 && strncmp(name, "user.overlay.", 13) != 0) ||
                    strcmp(name, "security.capability") == 0;
                if (!keep || size > IMAGE_LAYER_MAX_XATTR) {
                        c->st->dropped_xattrs++;
                        continue;
                }
                if (fsetxattr(fd, name, value, size, 0) < 0) {
                        if (errno == ENOSPC || errno == EDQUOT)
                                return -errno;
                        c->st->dropped_xattrs++; /* the file system refuses it */
                }
        }
        return 0;
}

/* Owner, mode, xattrs and mtime of an open file or directory. */
static int set_meta(struct ctx *c, struct archive_entry *e, int fd)
{
        if (fchown(fd, map_id(archive_entry_uid(e)), map_id(archive_entry_gid(e))) < 0 ||
            fchmod(fd, archive_entry_perm(e) & 07777) < 0)
                return -errno;
        int r = set_xattrs(c, e, fd);
        if (r < 0)
                return r;
        struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
                                 {archive_entry_mtime(e), archive_entry_mtime_nsec(e)}};
        (void)futimens(fd, ts);
        return 0;
}

static int archive_fail(struct ctx *c, struct archive *a, const char *what)
{
        return refuse(c, "the layer's tar is not readable at %s: %s", what,
                      archive_error_string(a) ? archive_error_string(a) : "unknown error");
}

static int layer_write_file(struct ctx *c, struct archive *a, struct archive_entry *e, int dir,
                            const char *name, const char *raw)
{
        int r = remove_at(dir, name, false);
        if (r < 0)
                return r;
        _cleanup_close_ int fd =
            openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
        if (size < 0 || (uint64_t)size > IMAGE_LAYER_MAX_BYTES - c->st->bytes)
                return refuse(c, "'%.200s': the layer holds more than %llu bytes", raw,
                              (unsigned long long)IMAGE_LAYER_MAX_BYTES);
        /* counted before a byte of it is written: a bomb stops here (whole blocks, as the
         * disk holds them) */
        if ((r = admit(c, ((uint64_t)size + 4095) & ~(uint64_t)4095)) < 0)
                return r;
        for (;;) {
                const void *buf;
                size_t len;
                la_int64_t off;
                int k = archive_read_data_block(a, &buf, &len, &off);
                if (k == ARCHIVE_EOF)
                        break;
                if (k < ARCHIVE_WARN)
                        return archive_fail(c, a, raw);
                if (off < 0 || (int64_t)len > size || off > size - (int64_t)len)
                        return refuse(c, "'%.200s': data past the size its header says", raw);
                for (size_t put = 0; put < len;) {
                        ssize_t w =
                            pwrite(fd, (const char *)buf + put, len - put, (off_t)off + (off_t)put);
                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w < 0)
                                return -errno;
                        put += (size_t)w;
                }
        }
        if (ftruncate(fd, (off_t)size) < 0) /* a sparse tail stays a hole */
                return -errno;
        c->st->bytes += (uint64_t)size;
        return set_meta(c, e, fd);
}

static int layer_write_dir(struct ctx *c, struct archive_entry *e, int dir, const char *name)
{
        int r = remove_at(dir, name, true);
        if (r < 0 || (r = admit(c, IMAGE_ADMIT_DIR_COST)) < 0)
                return r;
        if (mkdirat(dir, name, 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return set_meta(c, e, fd);
}

static int write_hardlink(struct ctx *c, struct archive_entry *e, int dir, const char *name,
                          const char *raw)
{
        const char *traw = archive_entry_hardlink(e);
        struct path t;
        _cleanup_close_ int tdir = -EBADF;
        int r = path_parse(c, traw, &t);
        if (r < 0)
                return r;
        if (t.n == 0)
                return refuse(c, "'%.200s': a hard link to the layer's root", raw);
        r = open_dir(c, traw, &t, t.n - 1, false, &tdir);
        if (r == -ENOENT)
                return refuse(c, "'%.200s': a hard link to '%.200s', which is not in the layer",
                              raw, traw);
        if (r < 0)
                return r;
        struct stat st;
        if (fstatat(tdir, t.comp[t.n - 1], &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? refuse(c,
                                                "'%.200s': a hard link to '%.200s', which is not "
                                                "in the layer",
                                                raw, traw)
                                       : -errno;
        if (S_ISDIR(st.st_mode))
                return refuse(c, "'%.200s': a hard link to the directory '%.200s'", raw, traw);
        struct stat dst;
        if (fstatat(dir, name, &dst, AT_SYMLINK_NOFOLLOW) == 0 && dst.st_ino == st.st_ino &&
            dst.st_dev == st.st_dev)
                return 0; /* linked already (or a link to itself) */
        r = remove_at(dir, name, false);
        if (r < 0)
                return r;
        if (linkat(tdir, t.comp[t.n - 1], dir, name, 0) < 0)
                return -errno;
        c->st->hardlinks++;
        return 0;
}

static int write_special(struct ctx *c, struct archive_entry *e, int dir, const char *name,
                         const char *raw)
{
        mode_t type = archive_entry_filetype(e);
        int r;
        if (type == AE_IFLNK) {
                const char *target = archive_entry_symlink(e);
                if (!target || !*target || strlen(target) >= PATH_MAX)
                        return refuse(c, "'%.200s': a symlink without a valid target", raw);
                if ((r = remove_at(dir, name, false)) < 0)
                        return r;
                /* Any target: it is resolved inside the sandbox's root, never on the host. */
                if (symlinkat(target, dir, name) < 0)
                        return -errno;
                c->st->symlinks++;
        } else if (type == AE_IFIFO) {
                if ((r = remove_at(dir, name, false)) < 0)
                        return r;
                if (mkfifoat(dir, name, archive_entry_perm(e) & 0777) < 0)
                        return -errno;
        } else {
                /* device nodes, sockets: a layer never needs them (the jailer makes /dev) */
                if (!c->st->skipped_devices++)
                        snprintf(c->st->first_device, sizeof(c->st->first_device), "%s", raw);
                return 0;
        }
        if (fchownat(dir, name, map_id(archive_entry_uid(e)), map_id(archive_entry_gid(e)),
                     AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT},
                                 {archive_entry_mtime(e), archive_entry_mtime_nsec(e)}};
        (void)utimensat(dir, name, ts, AT_SYMLINK_NOFOLLOW);
        return 0;
}

/* ".wh.NAME" and ".wh..wh..opq" (the OCI image spec's whiteouts) as overlayfs has them. */
static int write_whiteout(struct ctx *c, int dir, const char *name, const char *raw)
{
        if (strcmp(name, WH_OPAQUE) == 0) {
                if (fsetxattr(dir, OPAQUE_XATTR, "y", 1, 0) < 0)
                        return -errno;
                c->st->opaque++;
                return 0;
        }
        if (strncmp(name, WH_META, strlen(WH_META)) == 0)
                return 0; /* aufs bookkeeping (.wh..wh.plnk, ...) */
        const char *target = name + strlen(WH_PREFIX);
        if (!*target || strcmp(target, ".") == 0 || strcmp(target, "..") == 0)
                return refuse(c, "'%.200s': a whiteout without a name", raw);
        int r = remove_at(dir, target, false);
        if (r < 0)
                return r;
        if (mknodat(dir, target, S_IFCHR | 0000, makedev(0, 0)) < 0)
                return -errno;
        c->st->whiteouts++;
        return 0;
}

static int one_entry(struct ctx *c, struct archive *a, struct archive_entry *e)
{
        const char *raw = archive_entry_pathname(e);
        struct path p;
        int r = path_parse(c, raw, &p);
        if (r < 0)
                return r;
        if (p.n == 0) { /* "./": the layer's root itself */
                if (archive_entry_filetype(e) != AE_IFDIR)
                        return refuse(c, "'%.200s': the layer's root is not a directory", raw);
                return set_meta(c, e, c->root);
        }
        const char *name = p.comp[p.n - 1];
        _cleanup_close_ int dir = -EBADF;
        r = open_dir(c, raw, &p, p.n - 1, true, &dir);
        if (r < 0)
                return r;
        if (strncmp(name, WH_PREFIX, strlen(WH_PREFIX)) == 0)
                return write_whiteout(c, dir, name, raw);
        if (archive_entry_hardlink(e))
                return write_hardlink(c, e, dir, name, raw);
        switch (archive_entry_filetype(e)) {
        case AE_IFREG:
                return layer_write_file(c, a, e, dir, name, raw);
        case AE_IFDIR:
                return layer_write_dir(c, e, dir, name);
        default:
                return write_special(c, e, dir, name, raw);
        }
}

int image_layer_extract(struct archive *a, int root_fd, struct image_admission *adm,
                        const char *what, struct image_layer_stats *stats,
                        char err[static IMAGE_LAYER_ERR_MAX])
{
        struct ctx c = {.root = root_fd, .st = stats, .err = err, .adm = adm, .what = what};
        struct archive_entry *e;
        err[0] = 0;
        for (;;) {
                int k = archive_read_next_header(a, &e);
                if (k == ARCHIVE_EOF)
                        return 0;
                if (k < ARCHIVE_WARN)
                        return archive_fail(&c, a, "an entry's header");
                if (++stats->entries > IMAGE_LAYER_MAX_ENTRIES)
                        return refuse(&c, "the layer has more than %u entries",
                                      IMAGE_LAYER_MAX_ENTRIES);
                int r = one_entry(&c, a, e);
                if (r < 0) {
                        if (!err[0])
                                snprintf(err, IMAGE_LAYER_ERR_MAX, "'%.200s': %s",
                                         archive_entry_pathname(e) ? archive_entry_pathname(e)
                                                                   : "?",
                                         strerror(-r));
                        return r;
                }
        }
}
