/* SPDX-License-Identifier: Apache-2.0 */
#include "ui/ui-files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macros.h"
#include "sha256.h"

static const struct {
        const char *ext, *type;
} types[] = {
    {".html", "text/html; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".json", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".woff2", "font/woff2"},
    {".txt", "text/plain; charset=utf-8"},
};

const char *ui_content_type(const char *name)
{
        const char *dot = strrchr(name, '.');
        if (!dot || strchr(dot, '/'))
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(types); i++)
                if (strcmp(dot, types[i].ext) == 0)
                        return types[i].type;
        return NULL;
}

bool ui_name_valid(const char *name)
{
        static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "0123456789._-";
        size_t len = strlen(name);
        if (len == 0 || len > UI_MAX_NAME)
                return false;
        for (const char *seg = name;;) {
                size_t l = strcspn(seg, "/");
                if (l == 0 || seg[0] == '.' || strspn(seg, ok) < l)
                        return false;
                if (!seg[l])
                        return true;
                seg += l + 1;
        }
}

/* One token of an If-None-Match list matches etag: W/ prefixes are ignored (weak comparison). */
bool ui_etag_matches(const char *inm, const char *etag)
{
        size_t el = strlen(etag);
        const char *p = inm;
        while (p && *p) {
                p += strspn(p, " \t,");
                if (*p == '*')
                        return true;
                if (strncmp(p, "W/", 2) == 0)
                        p += 2;
                size_t l = strcspn(p, " \t,");
                if (l == el && memcmp(p, etag, el) == 0)
                        return true;
                p += l;
        }
        return false;
}

const struct ui_file *ui_files_find(const struct ui_files *u, const char *name)
{
        if (!u)
                return NULL;
        for (size_t i = 0; i < u->n; i++)
                if (strcmp(u->files[i].name, name) == 0)
                        return &u->files[i];
        return NULL;
}

void ui_files_free(struct ui_files *u)
{
        if (!u)
                return;
        for (size_t i = 0; i < u->n; i++) {
                free(u->files[i].name);
                free(u->files[i].data);
        }
        free(u->files);
        free(u->dir);
        free(u);
}

/* Read the regular file at dfd/base (not following a symlink) into a new entry named rel. */
static int add_file(struct ui_files *u, int dfd, const char *base, const char *rel)
{
        const char *type = ui_content_type(rel);
        if (!type)
                return 0; /* a type the console does not serve (README.md, sources maps...) */
        if (u->n >= UI_MAX_FILES) {
                log_warning("console: more than %d files, %s and later ones left out", UI_MAX_FILES,
                            rel);
                return 0;
        }
        _cleanup_close_ int fd = openat(dfd, base, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return 0; /* a symlink, a FIFO, gone meanwhile: not served */
        if ((uint64_t)st.st_size > UI_MAX_FILE_BYTES ||
            u->total + (size_t)st.st_size > UI_MAX_TOTAL) {
                log_warning(
                    "console: %s is too large (%lld bytes; at most %u per file, %u in all): "
                    "not served",
                    rel, (long long)st.st_size, UI_MAX_FILE_BYTES, UI_MAX_TOTAL);
                return 0;
        }
        _cleanup_free_ uint8_t *data = malloc(st.st_size ? (size_t)st.st_size : 1);
        _cleanup_free_ char *name = strdup(rel);
        if (!data || !name)
                return -ENOMEM;
        int e = st.st_size ? read_exact(fd, data, (size_t)st.st_size) : 0;
        if (e < 0) {
                log_warning_errno(e, "console: reading %s: %m", rel);
                return 0;
        }
        struct ui_file *f = realloc(u->files, (u->n + 1) * sizeof(*f));
        if (!f)
                return -ENOMEM;
        u->files = f;
        f = &u->files[u->n];
        *f = (struct ui_file){.len = (size_t)st.st_size, .content_type = type};
        struct sha256 c;
        char hex[65];
        sha256_init(&c);
        sha256_update(&c, data, f->len);
        sha256_final_hex(&c, hex);
        snprintf(f->etag, sizeof(f->etag), "\"%.16s\"", hex);
        f->data = TAKE_PTR(data);
        f->name = TAKE_PTR(name);
        u->total += f->len;
        u->n++;
        return 0;
}

static int walk(struct ui_files *u, int dfd, const char *prefix, unsigned depth)
{
        int fd2 = dup(dfd);
        if (fd2 < 0)
                return -errno;
        DIR *d = fdopendir(fd2);
        if (!d) {
                close(fd2);
                return -errno;
        }
        struct dirent *de;
        int r = 0;
        while (r >= 0 && (de = readdir(d))) {
                char rel[UI_MAX_NAME + 2];
                int l =
                    snprintf(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" : "", de->d_name);
                if (l < 0 || (size_t)l >= sizeof(rel) || !ui_name_valid(rel))
                        continue; /* ".", "..", hidden files, odd names */
                unsigned char type = de->d_type;
                struct stat st;
                if (type == DT_UNKNOWN) /* file systems that do not say: ask, not following */
                        type = fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? DT_UNKNOWN
                               : S_ISDIR(st.st_mode)                                  ? DT_DIR
                               : S_ISREG(st.st_mode)                                  ? DT_REG
                                                                                      : DT_UNKNOWN;
                if (type == DT_DIR) {
                        if (depth >= UI_MAX_DEPTH)
                                continue;
                        _cleanup_close_ int sub = openat(
                            dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                        if (sub >= 0)
                                r = walk(u, sub, rel, depth + 1);
                } else if (type == DT_REG) {
                        r = add_file(u, dfd, de->d_name, rel);
                }
        }
        closedir(d);
        return r;
}

static int cmp_files(const void *a, const void *b)
{
        return strcmp(((const struct ui_file *)a)->name, ((const struct ui_file *)b)->name);
}

int ui_files_load(const char *dir, struct ui_files **ret)
{
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        struct ui_files *u = calloc(1, sizeof(*u));
        if (!u || !(u->dir = strdup(dir))) {
                free(u);
                return -ENOMEM;
        }
        int r = walk(u, dfd, "", 0);
        if (r >= 0 && !ui_files_find(u, "index.html"))
                r = -ENOENT;
        if (r < 0) {
                ui_files_free(u);
                return r;
        }
        /* A stable order: logs and tests see the same table whatever readdir's order. */
        if (u->n > 1)
                qsort(u->files, u->n, sizeof(*u->files), cmp_files);
        *ret = u;
        return 0;
}
