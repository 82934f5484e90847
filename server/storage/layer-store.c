/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/layer-store.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fd-util.h"
#include "macros.h"
#include "random-util.h"
#include "sha256.h"

#define WALK_MAX_DEPTH 256
#define OPAQUE_XATTR   "trusted.overlay.opaque"
/* Content is hashed and copied in pieces of this size (copy_content). */
#define CONTENT_CHUNK (64 * 1024)

static pthread_rwlock_t store_lock = PTHREAD_RWLOCK_INITIALIZER;

void layer_store_read_lock(void)
{
        pthread_rwlock_rdlock(&store_lock);
}

void layer_store_unlock(void)
{
        pthread_rwlock_unlock(&store_lock);
}

void layer_store_path(const char *state, const char *hex, char *buf, size_t size)
{
        snprintf(buf, size, "%s/layers/%s", state, hex);
}

static bool is_hex64(const char *s)
{
        size_t n = strspn(s, "0123456789abcdef");
        return n == 64 && s[64] == 0;
}

int layer_store_is_layer(const char *state, const char *path, char *ret_hex)
{
        size_t l = strlen(state);
        if (strncmp(path, state, l) != 0 || strncmp(path + l, "/layers/", 8) != 0 ||
            !is_hex64(path + l + 8))
                return 0;
        if (ret_hex)
                memcpy(ret_hex, path + l + 8, LAYER_ID_MAX);
        return 1;
}

#define WALK_MAX_HARDLINKED 65536 /* multiply-linked files tracked per layer; more are copied */

struct hardlinked {
        ino_t ino;
        char *path; /* its first copy, relative to the layer's root; NULL: a free slot */
};

struct walk {
        struct sha256 h;
        bool upper;   /* shift owners into sandbox ids, keep whiteouts */
        bool link;    /* hard-link regular files instead of copying them */
        uid_t base;   /* host id of sandbox id 0 (upper) */
        uid_t count;  /* ids mapped from base on (upper) */
        dev_t dev;    /* never leave this file system */
        int dst_root; /* the new layer's root dir */
        /* files with st_nlink > 1 copied so far, an open-addressing table on the inode
         * number (size a power of two, at most half full): their other names become links */
        struct hardlinked *seen;
        size_t n_seen, cap_seen;
        /* WALK_SCRATCH bytes on first use (walk_scratch()): xattr names, one xattr value, one
         * piece of file content. On the heap, not thread-local: glibc puts static TLS on every
         * thread's stack, small relay threads included. */
        char *scratch;
};

#define XATTR_NAMES_MAX (64 * 1024) /* the kernel's bound on a file's xattr name list */
#define XATTR_VALUE_MAX (64 * 1024) /* and on one value */
#define WALK_SCRATCH    (XATTR_NAMES_MAX + XATTR_VALUE_MAX + CONTENT_CHUNK)

static char *walk_scratch(struct walk *w)
{
        if (!w->scratch)
                w->scratch = malloc(WALK_SCRATCH);
        return w->scratch;
}

static void walk_done(struct walk *w)
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

static unsigned map_id(const struct walk *w, unsigned id)
{
        if (!w->upper)
                return id;
        if (id >= w->base && id - w->base < w->count)
                return id - w->base;
        return 65534; /* not the sandbox's: nobody */
}

static void hash_entry(struct walk *w, const char *path, const struct stat *st)
{
        char head[256];
        int n = snprintf(head, sizeof(head), "%o %u %u %llu", (unsigned)st->st_mode,
                         map_id(w, st->st_uid), map_id(w, st->st_gid),
                         S_ISREG(st->st_mode) ? (unsigned long long)st->st_size : 0ULL);
        sha256_update(&w->h, path, strlen(path) + 1);
        sha256_update(&w->h, head, (size_t)n + 1);
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in dfd, sorted (the hash must not depend on readdir order). */
static int list_dir(int dfd, char ***ret, size_t *ret_n)
{
        DIR *d = opendir_fd(dfd);
        if (!d)
                return -errno;
        char **v = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        int r = 0;
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (n == cap) {
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
        if (n)
                qsort(v, n, sizeof(*v), cmp_names);
        *ret = v;
        *ret_n = n;
        return 0;
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
        if (fchown(out, map_id(w, st->st_uid), map_id(w, st->st_gid)) < 0 ||
            fchmod(out, st->st_mode & 07777) < 0)
                return -errno;
        struct timespec ts[2] = {st->st_atim, st->st_mtim};
        futimens(out, ts);
        if (st->st_nlink > 1)
                seen_add(w, st->st_ino, path + 1);
        return 0;
}

static int walk_dir(struct walk *w, int sdfd, int ddfd, const char *path, int depth);

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
        r = walk_dir(w, sub, dsub, path, depth + 1);
        if (r < 0)
                return r;
        if (fchown(dsub, map_id(w, st->st_uid), map_id(w, st->st_gid)) < 0 ||
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
        if (fchownat(ddfd, name, map_id(w, st->st_uid), map_id(w, st->st_gid),
                     AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        return 0;
}

static int walk_dir(struct walk *w, int sdfd, int ddfd, const char *path, int depth)
{
        if (depth > WALK_MAX_DEPTH)
                return -ELOOP;
        char **names = NULL;
        size_t n = 0;
        int r = list_dir(sdfd, &names, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct stat st;
                _cleanup_free_ char *sub = NULL;
                if (fstatat(sdfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = -errno;
                        break;
                }
                if (asprintf(&sub, "%s/%s", path, names[i]) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (st.st_dev != w->dev)
                        continue; /* a mount point: never entered */
                hash_entry(w, sub, &st);
                if (S_ISDIR(st.st_mode))
                        r = copy_subdir(w, sdfd, ddfd, names[i], sub, &st, depth);
                else if (S_ISREG(st.st_mode))
                        r = copy_file(w, sdfd, ddfd, names[i], sub, &st);
                else
                        r = copy_special(w, sdfd, ddfd, names[i], &st);
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return r;
}

/* Hash-only walk of a tree built in place (layer_store_adopt): the same entries and content
 * as a copy would hash, hard-link identity included, nothing written. */
static int hash_dir(struct walk *w, int sdfd, const char *path, int depth)
{
        if (depth > WALK_MAX_DEPTH)
                return -ELOOP;
        char **names = NULL;
        size_t n = 0;
        int r = list_dir(sdfd, &names, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct stat st;
                _cleanup_free_ char *sub = NULL;
                if (fstatat(sdfd, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = -errno;
                        break;
                }
                if (asprintf(&sub, "%s/%s", path, names[i]) < 0) {
                        r = -ENOMEM;
                        break;
                }
                if (st.st_dev != w->dev) {
                        r = -EXDEV; /* nothing may be mounted in a layer being adopted */
                        break;
                }
                hash_entry(w, sub, &st);
                if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
                        int flags = S_ISDIR(st.st_mode) ? O_DIRECTORY : O_NOCTTY | O_NONBLOCK;
                        _cleanup_close_ int fd =
                            openat(sdfd, names[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC | flags);
                        if (fd < 0) {
                                r = -errno;
                                break;
                        }
                        char v[8];
                        if (S_ISDIR(st.st_mode) && fgetxattr(fd, OPAQUE_XATTR, v, sizeof(v)) > 0)
                                sha256_update(&w->h, "opaque", 7);
                        const char *first =
                            S_ISREG(st.st_mode) && st.st_nlink > 1 ? seen_path(w, st.st_ino) : NULL;
                        if (first) {
                                sha256_update(&w->h, "hardlink", 9);
                                sha256_update(&w->h, first, strlen(first) + 1);
                                continue;
                        }
                        r = copy_user_xattrs(w, fd, -1);
                        if (r >= 0 && S_ISREG(st.st_mode))
                                r = copy_content(w, fd, -1, st.st_size);
                        if (r >= 0 && S_ISREG(st.st_mode) && st.st_nlink > 1)
                                seen_add(w, st.st_ino, sub + 1);
                        if (r >= 0 && S_ISDIR(st.st_mode))
                                r = hash_dir(w, fd, sub, depth + 1);
                } else if (S_ISLNK(st.st_mode)) {
                        char target[PATH_MAX];
                        ssize_t k = readlinkat(sdfd, names[i], target, sizeof(target) - 1);
                        if (k < 0) {
                                r = -errno;
                                break;
                        }
                        sha256_update(&w->h, target, (size_t)k + 1);
                }
        }
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return r;
}

static int ensure_dirs(const char *state)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/layers", state);
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        snprintf(path, sizeof(path), "%s/layers/.imports", state);
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Walk src (an open dir) into a fresh temp dir, then rename it to layers/<hash>. */
static int ingest(const char *state, int src, struct walk *w, char *ret_hex)
{
        char tmp[4096], final[4096], rnd[17];
        struct stat st;
        int r = ensure_dirs(state);
        if (r < 0)
                return r;
        if (fstat(src, &st) < 0)
                return -errno;
        w->dev = st.st_dev;
        sha256_init(&w->h);
        hash_entry(w, "", &st);
        if ((r = random_hex(rnd, 8)) < 0)
                return r;
        snprintf(tmp, sizeof(tmp), "%s/layers/.tmp-%s", state, rnd);
        if (mkdir(tmp, 0700) < 0)
                return -errno;
        _cleanup_close_ int dst = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        w->dst_root = dst;
        r = dst < 0 ? -errno : walk_dir(w, src, dst, "", 0);
        walk_done(w);
        if (r >= 0 && (fchown(dst, map_id(w, st.st_uid), map_id(w, st.st_gid)) < 0 ||
                       fchmod(dst, st.st_mode & 07777) < 0))
                r = -errno;
        if (r < 0) {
                rm_rf(tmp);
                return r;
        }
        sha256_final_hex(&w->h, ret_hex);
        layer_store_path(state, ret_hex, final, sizeof(final));
        if (rename(tmp, final) < 0) {
                r = errno == EEXIST || errno == ENOTEMPTY ? 0 : -errno;
                rm_rf(tmp); /* the same layer is stored already */
        }
        return r;
}

int layer_store_ingest_upper(const char *state, const char *sandbox_dir, uid_t uid_base,
                             uid_t uid_count, char *ret_hex)
{
        char path[4096];
        struct stat dir_st, up_st;
        snprintf(path, sizeof(path), "%s/rootfs/upper", sandbox_dir);
        _cleanup_close_ int src = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0)
                return errno == ENOENT ? -ENODEV : -errno;
        /* The tmpfs must really be mounted there (an old sandbox has an empty dir). */
        if (fstat(src, &up_st) < 0 || stat(sandbox_dir, &dir_st) < 0)
                return -errno;
        if (up_st.st_dev == dir_st.st_dev)
                return -ENODEV;
        struct walk w = {.upper = true, .base = uid_base, .count = uid_count};
        return ingest(state, src, &w, ret_hex);
}

int layer_store_import_dir(const char *state, const char *dir, char *ret_hex)
{
        struct stat st;
        char key[65], cache[4096], have[4096];
        int r = ensure_dirs(state);
        if (r < 0)
                return r;
        _cleanup_close_ int src = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0 || fstat(src, &st) < 0)
                return -errno;
        /* cache key: the dir's identity; build.sh replaces a layer dir, never edits it */
        struct sha256 h;
        char id[4096 + 128];
        int n = snprintf(id, sizeof(id), "%s\n%llu %llu %lld.%09ld", dir,
                         (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                         (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
        sha256_init(&h);
        sha256_update(&h, id, (size_t)n);
        sha256_final_hex(&h, key);
        snprintf(cache, sizeof(cache), "%s/layers/.imports/%s", state, key);
        _cleanup_close_ int cfd = open(cache, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd >= 0) {
                char hex[LAYER_ID_MAX] = "";
                ssize_t k = read(cfd, hex, 64);
                struct stat lst;
                layer_store_path(state, hex, have, sizeof(have));
                if (k == 64 && is_hex64(hex) && stat(have, &lst) == 0) {
                        memcpy(ret_hex, hex, LAYER_ID_MAX);
                        return 0;
                }
        }
        struct walk w = {.link = true};
        r = ingest(state, src, &w, ret_hex);
        if (r >= 0) {
                _cleanup_close_ int out =
                    open(cache, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (out >= 0)
                        write_full(out, ret_hex, 64);
        }
        return r;
}

struct refs {
        char (*hex)[LAYER_ID_MAX];
        size_t n, cap;
};

static void refs_add(struct refs *rf, const char *hex)
{
        if (rf->n == rf->cap) {
                size_t cap = MAX(rf->cap * 2, (size_t)32);
                void *nv = realloc(rf->hex, cap * sizeof(*rf->hex));
                if (!nv)
                        return;
                rf->hex = nv;
                rf->cap = cap;
        }
        memcpy(rf->hex[rf->n++], hex, LAYER_ID_MAX);
}

static bool refs_has(const struct refs *rf, const char *hex)
{
        for (size_t i = 0; i < rf->n; i++)
                if (strcmp(rf->hex[i], hex) == 0)
                        return true;
        return false;
}

/* Every layer a JSON file's "layers" array names ("sha256:<hex>" or a store path). Returns
 * -errno when a file exists but cannot be read: gc must then keep everything. */
static int refs_from_file(const char *state, const char *path, struct refs *rf)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_all(fd, 1024 * 1024, &text, &len);
        if (r < 0)
                return r;
        cJSON *j = cJSON_ParseWithLength(text, len);
        const cJSON *l, *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
        char hex[LAYER_ID_MAX];
        cJSON_ArrayForEach(l, layers)
        {
                if (!cJSON_IsString(l))
                        continue;
                const char *v = l->valuestring;
                if (strncmp(v, LAYER_PREFIX, strlen(LAYER_PREFIX)) == 0 &&
                    is_hex64(v + strlen(LAYER_PREFIX)))
                        refs_add(rf, v + strlen(LAYER_PREFIX));
                else if (layer_store_is_layer(state, v, hex))
                        refs_add(rf, hex);
        }
        cJSON_Delete(j);
        return 0;
}

static int refs_from_dir(const char *state, const char *sub, const char *file, struct refs *rf)
{
        char base[4096], path[8192];
        snprintf(base, sizeof(base), "%s/%s", state, sub);
        DIR *d = opendir(base);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int r = 0;
        struct dirent *de;
        while (r >= 0 && (de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s/%s", base, de->d_name, file);
                r = refs_from_file(state, path, rf);
        }
        closedir(d);
        return r;
}

int layer_store_gc(const char *state, int startup)
{
        struct refs rf = {};
        char base[4096], path[8192];
        int removed = 0;
        pthread_rwlock_wrlock(&store_lock);
        int r = refs_from_dir(state, "templates", "template.json", &rf);
        if (r >= 0)
                r = refs_from_dir(state, "sandboxes", "sandbox.json", &rf);
        /* the template build cache (server/build/README.md): one layer per cached step */
        if (r >= 0)
                r = refs_from_dir(state, "build/cache", "layer.json", &rf);
        snprintf(base, sizeof(base), "%s/layers", state);
        DIR *d = r >= 0 ? opendir(base) : NULL;
        struct dirent *de;
        while (d && (de = readdir(d))) {
                snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
                if ((is_hex64(de->d_name) && !refs_has(&rf, de->d_name)) ||
                    (startup && strncmp(de->d_name, ".tmp-", 5) == 0)) {
                        if (rm_rf(path) >= 0)
                                removed++;
                }
        }
        if (d)
                closedir(d);
        free(rf.hex);
        pthread_rwlock_unlock(&store_lock);
        return r < 0 ? r : removed;
}

int layer_store_usage(const char *state, size_t *ret_layers)
{
        char base[4096];
        size_t n = 0;
        snprintf(base, sizeof(base), "%s/layers", state);
        DIR *d = opendir(base);
        struct dirent *de;
        while (d && (de = readdir(d)))
                n += is_hex64(de->d_name);
        if (d)
                closedir(d);
        *ret_layers = n;
        return 0;
}

int layer_store_tmp_dir(const char *state, char *ret_path, size_t size)
{
        char rnd[17];
        int r = ensure_dirs(state);
        if (r < 0 || (r = random_hex(rnd, 8)) < 0)
                return r;
        if ((size_t)snprintf(ret_path, size, "%s/layers/.tmp-%s", state, rnd) >= size)
                return -ENAMETOOLONG;
        return mkdir(ret_path, 0700) < 0 ? -errno : 0;
}

int layer_store_adopt(const char *state, const char *tmp, char *ret_hex)
{
        char final[4096];
        struct stat st;
        _cleanup_close_ int src = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0 || fstat(src, &st) < 0)
                return -errno;
        struct walk w = {.link = true, .dev = st.st_dev};
        sha256_init(&w.h);
        hash_entry(&w, "", &st);
        int r = hash_dir(&w, src, "", 0);
        walk_done(&w);
        if (r < 0)
                return r;
        sha256_final_hex(&w.h, ret_hex);
        layer_store_path(state, ret_hex, final, sizeof(final));
        if (rename(tmp, final) < 0) {
                if (errno != EEXIST && errno != ENOTEMPTY)
                        return -errno;
                rm_rf(tmp); /* the same layer is stored already */
        }
        return 0;
}

/* layers/.digests/<hex>: the store layer an image layer blob of that digest became. */
static void digest_path(const char *state, const char *digest_hex, char *buf, size_t size)
{
        snprintf(buf, size, "%s/layers/.digests/%s", state, digest_hex);
}

int layer_store_digest_lookup(const char *state, const char *digest_hex, char *ret_hex)
{
        char path[4096], have[4096], hex[LAYER_ID_MAX] = "";
        struct stat st;
        if (!is_hex64(digest_hex))
                return -EINVAL;
        digest_path(state, digest_hex, path, sizeof(path));
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (read(fd, hex, 64) != 64 || !is_hex64(hex))
                return 0;
        layer_store_path(state, hex, have, sizeof(have));
        if (stat(have, &st) < 0 || !S_ISDIR(st.st_mode))
                return 0; /* collected since: import it again */
        memcpy(ret_hex, hex, LAYER_ID_MAX);
        return 1;
}

int layer_store_digest_record(const char *state, const char *digest_hex, const char *hex)
{
        char dir[4096], path[4096], tmp[4200];
        if (!is_hex64(digest_hex) || !is_hex64(hex))
                return -EINVAL;
        snprintf(dir, sizeof(dir), "%s/layers/.digests", state);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        digest_path(state, digest_hex, path, sizeof(path));
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        _cleanup_close_ int fd =
            open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        int r = write_full(fd, hex, 64);
        if (r < 0)
                return r;
        return rename(tmp, path) < 0 ? -errno : 0;
}
