/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/layer-walk.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

#define XATTR_NAMES_MAX (64 * 1024) /* the kernel's bound on a file's xattr name list */
#define XATTR_VALUE_MAX (64 * 1024) /* and on one value */
#define WALK_SCRATCH    (XATTR_NAMES_MAX + XATTR_VALUE_MAX + CONTENT_CHUNK)

static char *walk_scratch(struct walk *w)
{
        if (!w->scratch)
                w->scratch = malloc(WALK_SCRATCH);
        return w->scratch;
}

void layer_walk_done(struct walk *w)
{
        for (size_t i = 0; i < w->cap_seen; i++)
                free(w->seen[i].path);
        free(w->seen);
        w->seen = NULL;
        w->n_seen = w->cap_seen = 0;
        free(w->scratch);
        w->scratch = NULL;
}

static size_t seen_slot(const struct hardlinked *t, size_t cap, ino_t ino)
{
        size_t i = (size_t)(ino * 0x9E3779B97F4A7C15ULL) & (cap - 1);
        while (t[i].path && t[i].ino != ino)
                i = (i + 1) & (cap - 1);
        return i;
}

static const char *seen_path(const struct walk *w, ino_t ino)
{
        return w->cap_seen ? w->seen[seen_slot(w->seen, w->cap_seen, ino)].path : NULL;
}

static void seen_add(struct walk *w, ino_t ino, const char *path)
{
        if (w->n_seen >= WALK_MAX_HARDLINKED)
                return; /* not tracked: its other names are copied */
        if (2 * (w->n_seen + 1) > w->cap_seen) {
                size_t cap = MAX(w->cap_seen * 2, (size_t)64);
                struct hardlinked *t = calloc(cap, sizeof(*t));
                if (!t)
                        return;
                for (size_t i = 0; i < w->cap_seen; i++)
                        if (w->seen[i].path)
                                t[seen_slot(t, cap, w->seen[i].ino)] = w->seen[i];
                free(w->seen);
                w->seen = t;
                w->cap_seen = cap;
        }
        char *p = strdup(path);
        if (!p)
                return;
        w->seen[seen_slot(w->seen, w->cap_seen, ino)] = (struct hardlinked){ino, p};
        w->n_seen++;
}

unsigned layer_walk_map_id(const struct walk *w, unsigned id)
{
        if (!w->upper)
                return id;
        if (id >= w->base && id - w->base < w->count)
                return id - w->base;
        return 65534; /* not the sandbox's: nobody */
}

void layer_walk_hash_entry(struct walk *w, const char *path, const struct stat *st)
{
        char head[256];
        int n = snprintf(head, sizeof(head), "%o %u %u %llu", (unsigned)st->st_mode,
                         layer_walk_map_id(w, st->st_uid), layer_walk_map_id(w, st->st_gid),
                         S_ISREG(st->st_mode) ? (unsigned long long)st->st_size : 0ULL);
        sha256_update(&w->h, path, strlen(path) + 1);
        sha256_update(&w->h, head, (size_t)n + 1);
}

/* The user.* extended attributes of in (the files API keeps X-Metadata there as user.e2b.*),
 * hashed into the layer and set on out (out < 0: hashed only, the file is hard-linked). The
 * kernel bounds them (64 KiB of names, 64 KiB per value); user.overlay.* is overlayfs's own
 * namespace in some mounts and never copied. */
static int copy_user_xattrs(struct walk *w, int in, int out)
{
        char *names = walk_scratch(w);
        if (!names)
                return -ENOMEM;
        char *value = names + XATTR_NAMES_MAX;
        ssize_t n = flistxattr(in, names, XATTR_NAMES_MAX);
        if (n < 0)
                return errno == ENOTSUP || errno == ERANGE ? 0 : -errno;
        for (ssize_t off = 0; off < n; off += (ssize_t)strlen(names + off) + 1) {
                const char *name = names + off;
                if (strncmp(name, "user.", 5) != 0 || strncmp(name, "user.overlay.", 13) == 0)
                        continue;
                ssize_t k = fgetxattr(in, name, value, XATTR_VALUE_MAX);
                if (k < 0)
                        continue; /* removed meanwhile, or larger than the kernel allows */
                sha256_update(&w->h, "xattr", 6);
                sha256_update(&w->h, name, strlen(name) + 1);
                sha256_update(&w->h, value, (size_t)k);
                if (out >= 0 && fsetxattr(out, name, value, (size_t)k, 0) < 0)
                        return -errno;
        }
        return 0;
}

/* Whether len bytes at p are all zero. */
static bool all_zero(const char *p, size_t len)
{
        return len == 0 || (p[0] == 0 && memcmp(p, p + 1, len - 1) == 0);
}

static void hash_zero_run(struct walk *w, uint64_t *chunks)
{
        if (*chunks == 0)
                return;
        char mark[1 + sizeof(uint64_t)] = {'Z'};
        memcpy(mark + 1, chunks, sizeof(*chunks));
        sha256_update(&w->h, mark, sizeof(mark));
        *chunks = 0;
}

/*
 * A regular file's bytes, in CONTENT_CHUNK pieces on a fixed grid: a piece of zeros (a hole,
 * or zeros written out) joins a run hashed as 'Z' + the run's length in pieces, any other piece
 * is hashed as 'D' + its bytes and written to out (when out >= 0). So holes are never read
 * (SEEK_DATA skips them), the copy keeps them as holes, the time and space a copy takes are
 * bounded by the data the file really holds (a `truncate -s 5G` costs nothing), and the hash
 * depends on the bytes alone, not on where the source had its holes.
 */
static int copy_content(struct walk *w, int in, int out, off_t size)
{
        char *buf = walk_scratch(w);
        if (!buf)
                return -ENOMEM;
        buf += XATTR_NAMES_MAX + XATTR_VALUE_MAX;
        uint64_t zeros = 0;
        for (off_t pos = 0; pos < size;) {
                off_t data = lseek(in, pos, SEEK_DATA);
                if (data < 0 && errno == ENXIO)
                        data = size; /* only a hole is left */
                else if (data < 0)
                        data = pos; /* no SEEK_DATA here: read everything */
                off_t skip = MIN(data, size) / CONTENT_CHUNK * CONTENT_CHUNK;
                if (skip > pos) {
                        zeros += (uint64_t)(skip - pos) / CONTENT_CHUNK;
                        pos = skip;
                        if (pos >= size)
                                break;
                }
                size_t len = (size_t)MIN((off_t)CONTENT_CHUNK, size - pos);
                for (size_t got = 0; got < len;) {
                        ssize_t k = pread(in, buf + got, len - got, pos + (off_t)got);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0)
                                return k < 0 ? -errno : -ESTALE; /* shrunk: never, frozen */
                        got += (size_t)k;
                }
                if (all_zero(buf, len)) {
                        zeros++;
                } else {
                        hash_zero_run(w, &zeros);
                        sha256_update(&w->h, "D", 1);
                        sha256_update(&w->h, buf, len);
                        for (size_t put = 0; out >= 0 && put < len;) {
                                ssize_t k = pwrite(out, buf + put, len - put, pos + (off_t)put);
                                if (k < 0 && errno == EINTR)
                                        continue;
                                if (k < 0)
                                        return -errno;
                                put += (size_t)k;
                        }
                }
                pos += (off_t)len;
        }
        hash_zero_run(w, &zeros);
        /* the size is in the entry's hash already; the tail may be a hole */
        return out >= 0 && ftruncate(out, size) < 0 ? -errno : 0;
}

/* A regular file: its bytes, owner, mode, times and user xattrs; a further name of a
 * multiply-linked file already copied is linked to that copy (hashed as such). path: the
 * entry's path from the layer's root, "/a/b". */
static int copy_file(struct walk *w, int sdfd, int ddfd, const char *name, const char *path,
                     const struct stat *st)
{
        if (!w->link && st->st_nlink > 1) {
                const char *first = seen_path(w, st->st_ino);
                if (first) {
                        sha256_update(&w->h, "hardlink", 9);
                        sha256_update(&w->h, first, strlen(first) + 1);
                        return linkat(w->dst_root, first, ddfd, name, 0) < 0 ? -errno : 0;
                }
        }
        _cleanup_close_ int in =
            openat(sdfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (in < 0)
                return -errno;
        struct stat st2;
        if (fstat(in, &st2) < 0)
                return -errno;
        if (!S_ISREG(st2.st_mode) || st2.st_ino != st->st_ino || st2.st_dev != st->st_dev)
                return -ESTALE; /* swapped under us: the sandbox is frozen, so never */
        _cleanup_close_ int out = -EBADF;
        if (!w->link) {
                out =
                    openat(ddfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (out < 0)
                        return -errno;
        }
        int r = copy_content(w, in, out, st2.st_size);
        if (r < 0)
                return r;
        r = copy_user_xattrs(w, in, out);
        if (r < 0)
                return r;
        if (w->link)
                return linkat(sdfd, name, ddfd, name, 0) < 0 ? -errno : 0;
        if (fchown(out, layer_walk_map_id(w, st->st_uid), layer_walk_map_id(w, st->st_gid)) < 0 ||
            fchmod(out, st->st_mode & 07777) < 0)
                return -errno;
        struct timespec ts[2] = {st->st_atim, st->st_mtim};
        futimens(out, ts);
        if (st->st_nlink > 1)
                seen_add(w, st->st_ino, path + 1);
        return 0;
}

/* One entry of a directory being walked: its name in sdfd, its path in the layer ("/a/b"),
 * its lstat; ddfd is the directory it is copied into (-1 when only hashed). */
typedef int (*walk_entry_fn)(struct walk *w, int sdfd, int ddfd, const char *name, const char *path,
                             const struct stat *st, int depth);

/* Calls fn for each entry of sdfd in name order (the order the hash depends on), up to the
 * first that fails. */
static int walk_entries(struct walk *w, int sdfd, int ddfd, const char *path, int depth,
                        walk_entry_fn fn)
{
        if (depth > WALK_MAX_DEPTH)
                return -ELOOP;
        char **names = NULL;
        size_t n = 0;
        int r = dir_names_sorted(sdfd, SIZE_MAX, NULL, &names, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct stat st;
                _cleanup_free_ char *sub = NULL;
                if (fstatat(sdfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
                        r = -errno;
                else if (asprintf(&sub, "%s/%s", path, names[i]) < 0)
                        r = -ENOMEM;
                else
                        r = fn(w, sdfd, ddfd, names[i], sub, &st, depth);
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return r;
}

static int copy_entry(struct walk *w, int sdfd, int ddfd, const char *name, const char *path,
                      const struct stat *st, int depth);

static int copy_subdir(struct walk *w, int sdfd, int ddfd, const char *name, const char *path,
                       const struct stat *st, int depth)
{
        _cleanup_close_ int sub =
            openat(sdfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
                return -errno;
        if (mkdirat(ddfd, name, 0700) < 0)
                return -errno;
        _cleanup_close_ int dsub =
            openat(ddfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dsub < 0)
                return -errno;
        char v[8];
        ssize_t k = fgetxattr(sub, OPAQUE_XATTR, v, sizeof(v));
        if (k > 0) {
                sha256_update(&w->h, "opaque", 7);
                if (fsetxattr(dsub, OPAQUE_XATTR, v, (size_t)k, 0) < 0)
                        return -errno;
        }
        int r = copy_user_xattrs(w, sub, dsub);
        if (r < 0)
                return r;
        r = walk_entries(w, sub, dsub, path, depth + 1, copy_entry);
        if (r < 0)
                return r;
        if (fchown(dsub, layer_walk_map_id(w, st->st_uid), layer_walk_map_id(w, st->st_gid)) < 0 ||
            fchmod(dsub, st->st_mode & 07777) < 0)
                return -errno;
        struct timespec ts[2] = {st->st_atim, st->st_mtim};
        futimens(dsub, ts);
        return 0;
}

static int copy_special(struct walk *w, int sdfd, int ddfd, const char *name, const struct stat *st)
{
        if (S_ISLNK(st->st_mode)) {
                char target[PATH_MAX];
                ssize_t k = readlinkat(sdfd, name, target, sizeof(target) - 1);
                if (k < 0)
                        return -errno;
                target[k] = 0;
                sha256_update(&w->h, target, (size_t)k + 1);
                if (symlinkat(target, ddfd, name) < 0)
                        return -errno;
        } else if (S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0)) {
                /* overlay whiteout: the file is deleted in this layer */
                if (mknodat(ddfd, name, S_IFCHR | 0000, makedev(0, 0)) < 0)
                        return -errno;
        } else if (S_ISFIFO(st->st_mode)) {
                if (mkfifoat(ddfd, name, st->st_mode & 0777) < 0)
                        return -errno;
        } else {
                return 0; /* sockets, device nodes: not kept */
        }
        if (fchownat(ddfd, name, layer_walk_map_id(w, st->st_uid), layer_walk_map_id(w, st->st_gid),
                     AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return 0;
}

static int copy_entry(struct walk *w, int sdfd, int ddfd, const char *name, const char *path,
                      const struct stat *st, int depth)
{
        if (st->st_dev != w->dev)
                return 0; /* a mount point: never entered */
        /* sockets and device nodes (other than whiteouts) are not kept: not named either, so
         * that the name is the hash of what the layer holds and another node that receives the
         * layer finds the same (cluster/layer-pull.h) */
        bool whiteout = S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
        if (!S_ISDIR(st->st_mode) && !S_ISREG(st->st_mode) && !S_ISLNK(st->st_mode) &&
            !S_ISFIFO(st->st_mode) && !whiteout)
                return 0;
        layer_walk_hash_entry(w, path, st);
        if (S_ISDIR(st->st_mode))
                return copy_subdir(w, sdfd, ddfd, name, path, st, depth);
        if (S_ISREG(st->st_mode))
                return copy_file(w, sdfd, ddfd, name, path, st);
        return copy_special(w, sdfd, ddfd, name, st);
}

/* Hash-only walk of a tree built in place (layer_store_adopt): the same entries and content
 * as a copy would hash, hard-link identity included, nothing written. */
static int hash_entry(struct walk *w, int sdfd, int ddfd, const char *name, const char *path,
                      const struct stat *st, int depth)
{
        if (st->st_dev != w->dev)
                return -EXDEV; /* nothing may be mounted in a layer being adopted */
        layer_walk_hash_entry(w, path, st);
        if (S_ISDIR(st->st_mode) || S_ISREG(st->st_mode)) {
                int flags = S_ISDIR(st->st_mode) ? O_DIRECTORY : O_NOCTTY | O_NONBLOCK;
                _cleanup_close_ int fd =
                    openat(sdfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | flags);
                if (fd < 0)
                        return -errno;
                char v[8];
                if (S_ISDIR(st->st_mode) && fgetxattr(fd, OPAQUE_XATTR, v, sizeof(v)) > 0)
                        sha256_update(&w->h, "opaque", 7);
                bool linked = S_ISREG(st->st_mode) && st->st_nlink > 1 && !w->no_links;
                const char *first = linked ? seen_path(w, st->st_ino) : NULL;
                if (first) {
                        sha256_update(&w->h, "hardlink", 9);
                        sha256_update(&w->h, first, strlen(first) + 1);
                        return 0;
                }
                /* in copy_file's and copy_subdir's order: a file's content before its xattrs */
                int r = 0;
                if (S_ISREG(st->st_mode))
                        r = copy_content(w, fd, -1, st->st_size);
                if (r >= 0)
                        r = copy_user_xattrs(w, fd, -1);
                if (r >= 0 && linked)
                        seen_add(w, st->st_ino, path + 1);
                if (r >= 0 && S_ISDIR(st->st_mode))
                        r = walk_entries(w, fd, ddfd, path, depth + 1, hash_entry);
                return r;
        }
        if (S_ISLNK(st->st_mode)) {
                char target[PATH_MAX];
                ssize_t k = readlinkat(sdfd, name, target, sizeof(target) - 1);
                if (k < 0)
                        return -errno;
                target[k] = 0; /* hashed with its NUL, as copy_special does */
                sha256_update(&w->h, target, (size_t)k + 1);
        }
        return 0;
}

int layer_walk_copy(struct walk *w, int sdfd, int ddfd)
{
        return walk_entries(w, sdfd, ddfd, "", 0, copy_entry);
}

int layer_walk_hash(struct walk *w, int sdfd)
{
        return walk_entries(w, sdfd, -1, "", 0, hash_entry);
}
