/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Native file-system operations. Each runs with the selected user's file-system credentials
 * (agent_fs_become), so the kernel checks permissions and new entries belong to that user.
 * Paths resolve as envd's do (agent_path_resolve: relative to the user's home).
 *
 * Bounds: list returns at most FS_LIST_MAX entries (then "truncated"). Search and watch are
 * in native/native-search.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/fs-check.h"
#include "core/path.h"
#include "core/users.h"
#include "envd/files.h"
#include "json-util.h"
#include "macros.h"
#include "native/native.h"

#define FS_LIST_MAX 10000u

struct fs_ctx {
        struct agent_user u;
        int creds; /* 1 while agent_fs_become is in force */
        char *path;
};

static void fs_ctx_done(struct fs_ctx *c)
{
        if (c->creds)
                agent_fs_restore();
        c->creds = 0;
        agent_user_done(&c->u);
        free(c->path);
}

static int fs_status(int e)
{
        switch (-e) {
        case ENOENT:
        case ENOTDIR:
                return 404;
        case EACCES:
        case EPERM:
                return 403;
        case EEXIST:
        case ENOTEMPTY:
                return 409;
        case ENOSPC:
        case EDQUOT:
                return 507;
        case EINVAL:
        case ENAMETOOLONG:
        case ELOOP:
        case EISDIR:
                return 400;
        default:
                return 500;
        }
}

static int fs_fail(struct agent_request *r, int e, const char *what, const char *path)
{
        int st = fs_status(e);
        return native_error(r, st,
                            st == 404   ? "not_found"
                            : st == 403 ? "forbidden"
                            : st == 409 ? "conflict"
                            : st == 507 ? "insufficient_storage"
                            : st == 400 ? "bad_request"
                                        : "internal",
                            "%s %s: %s", what, path, strerror(-e));
}

/* User from ?user=, path from raw (query or body), then become the user. Answers errors. */
static int fs_begin(struct agent_request *r, const char *raw, struct fs_ctx *c)
{
        _cleanup_free_ char *uq = native_query(r, "user"), *name = NULL, *workdir = NULL;
        const char *user;
        int e;
        if (native_user_name(uq, &user) < 0)
                return native_error(r, 400, "bad_request", "user must be \"user\" or \"root\"");
        if (!user) {
                if (agent_config_default_user(&name) < 0)
                        return native_error(r, 500, "internal", "out of memory");
                user = name;
        }
        if ((e = agent_user_lookup(user, &c->u)) < 0)
                return native_error(r, 400, "bad_request", "unknown user %s", user);
        if (!raw)
                return native_error(r, 400, "bad_request", "path is required");
        (void)agent_config_default_workdir(&workdir);
        if (agent_path_resolve(raw, c->u.home, workdir, &c->path) < 0)
                return native_error(r, 400, "bad_request", "invalid path %.256s", raw);
        if ((e = agent_fs_become(&c->u)) < 0)
                return native_error(r, 500, "internal", "switching to %s: %s", user, strerror(-e));
        c->creds = 1;
        return 1;
}

static const char *type_name(mode_t m)
{
        return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

static cJSON *entry_json(const char *path, const struct stat *st)
{
        char mode[8];
        cJSON *o = cJSON_CreateObject();
        snprintf(mode, sizeof(mode), "%04o", (unsigned)(st->st_mode & 07777));
        if (!o || !cJSON_AddStringToObject(o, "name", agent_path_basename(path)) ||
            !cJSON_AddStringToObject(o, "path", path) ||
            !cJSON_AddStringToObject(o, "type", type_name(st->st_mode)) ||
            !cJSON_AddNumberToObject(o, "size", (double)st->st_size) ||
            !cJSON_AddStringToObject(o, "mode", mode) ||
            !cJSON_AddNumberToObject(o, "mtime", (double)st->st_mtim.tv_sec)) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}

static char *join(const char *dir, const char *name)
{
        char *p;
        if (asprintf(&p, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", name) < 0)
                return NULL;
        return p;
}

int native_fs_handle_stat(struct agent_request *r)
{
        _cleanup_free_ char *raw = native_query(r, "path");
        _cleanup_(fs_ctx_done) struct fs_ctx c = {0};
        struct stat st;
        int e = fs_begin(r, raw, &c);
        if (e != 1)
                return e;
        if ((e = agent_fs_check_path(c.path, false)) < 0)
                return fs_fail(r, e, "stat", c.path);
        if (lstat(c.path, &st) < 0)
                return fs_fail(r, -errno, "stat", c.path);
        _cleanup_json_ cJSON *o = entry_json(c.path, &st);
        return o ? native_json(r, 200, o) : native_error(r, 500, "internal", "out of memory");
}

int native_fs_handle_list(struct agent_request *r)
{
        _cleanup_free_ char *raw = native_query(r, "path");
        _cleanup_(fs_ctx_done) struct fs_ctx c = {0};
        int e = fs_begin(r, raw, &c);
        if (e != 1)
                return e;
        int fd = open(c.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return fs_fail(r, -errno, "list", c.path);
        DIR *d = (e = agent_fs_check_fd(fd)) < 0 ? NULL : fdopendir(fd);
        if (!d) {
                e = e < 0 ? e : -errno;
                close(fd);
                return fs_fail(r, e, "list", c.path);
        }
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *arr = o ? cJSON_AddArrayToObject(o, "entries") : NULL;
        unsigned n = 0;
        bool truncated = false;
        struct dirent *de;
        while (arr && (de = readdir(d))) {
                struct stat st;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (n++ >= FS_LIST_MAX) {
                        truncated = true;
                        break;
                }
                _cleanup_free_ char *p = join(c.path, de->d_name);
                if (p && fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                        cJSON_AddItemToArray(arr, entry_json(p, &st));
        }
        closedir(d);
        if (!arr || !cJSON_AddBoolToObject(o, "truncated", truncated))
                return native_error(r, 500, "internal", "out of memory");
        return native_json(r, 200, o);
}

static int mkdir_p(char *path)
{
        for (char *p = path + 1; *p; p++)
                if (*p == '/') {
                        *p = 0;
                        int e = mkdir(path, 0755) < 0 && errno != EEXIST ? -errno : 0;
                        *p = '/';
                        if (e < 0)
                                return e;
                }
        return mkdir(path, 0755) < 0 ? -errno : 0;
}

int native_fs_handle_mkdir(struct agent_request *r)
{
        _cleanup_json_ cJSON *body = NULL, *o = cJSON_CreateObject();
        _cleanup_(fs_ctx_done) struct fs_ctx c = {0};
        int e = native_read_json(r, &body);
        if (e != 0)
                return e;
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(body, "path");
        e = fs_begin(r, cJSON_IsString(p) ? p->valuestring : NULL, &c);
        if (e != 1)
                return e;
        e = mkdir_p(c.path);
        if (e == -EEXIST) {
                struct stat st;
                if (stat(c.path, &st) == 0 && S_ISDIR(st.st_mode))
                        return native_error(r, 409, "conflict", "%s already exists", c.path);
        }
        if (e < 0)
                return fs_fail(r, e, "mkdir", c.path);
        if (!o || !cJSON_AddStringToObject(o, "path", c.path))
                return native_error(r, 500, "internal", "out of memory");
        return native_json(r, 201, o);
}

int native_fs_handle_move(struct agent_request *r)
{
        _cleanup_json_ cJSON *body = NULL, *o = cJSON_CreateObject();
        _cleanup_(fs_ctx_done) struct fs_ctx c = {0};
        _cleanup_free_ char *to = NULL, *workdir = NULL;
        int e = native_read_json(r, &body);
        if (e != 0)
                return e;
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(body, "from");
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, "to");
        if (!cJSON_IsString(t))
                return native_error(r, 400, "bad_request", "from and to are required");
        e = fs_begin(r, cJSON_IsString(f) ? f->valuestring : NULL, &c);
        (void)agent_config_default_workdir(&workdir);
        if (e == 1 && agent_path_resolve(t->valuestring, c.u.home, workdir, &to) < 0)
                e = native_error(r, 400, "bad_request", "invalid path %.256s", t->valuestring);
        if (e != 1)
                return e;
        if (rename(c.path, to) < 0)
                return fs_fail(r, -errno, "move", c.path);
        if (!o || !cJSON_AddStringToObject(o, "path", to))
                return native_error(r, 500, "internal", "out of memory");
        return native_json(r, 200, o);
}

/* Remove name in dirfd, recursively, never following symlinks. */
static int remove_at(int dfd, const char *name, int depth)
{
        if (unlinkat(dfd, name, 0) == 0)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return -errno;
        if (depth > 256)
                return -ELOOP;
        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return -ENOMEM;
        }
        struct dirent *de;
        int e = 0;
        while (e == 0 && (de = readdir(d)))
                if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
                        e = remove_at(dirfd(d), de->d_name, depth + 1);
        closedir(d);
        if (e == 0 && unlinkat(dfd, name, AT_REMOVEDIR) < 0)
                e = -errno;
        return e;
}

int native_fs_handle_remove(struct agent_request *r)
{
        _cleanup_free_ char *raw = native_query(r, "path"), *rec = native_query(r, "recursive");
        _cleanup_(fs_ctx_done) struct fs_ctx c = {0};
        int e = fs_begin(r, raw, &c);
        if (e != 1)
                return e;
        if (strcmp(c.path, "/") == 0)
                return native_error(r, 400, "bad_request", "refusing to remove /");
        bool recursive = rec && (strcmp(rec, "true") == 0 || strcmp(rec, "1") == 0);
        if (recursive)
                e = remove_at(AT_FDCWD, c.path, 0);
        else if (unlink(c.path) < 0)
                e = errno == EISDIR && rmdir(c.path) < 0 ? -errno : errno == EISDIR ? 0 : -errno;
        if (e == -ENOTEMPTY)
                return native_error(r, 409, "conflict",
                                    "%s is a non-empty directory: pass recursive=true", c.path);
        if (e < 0)
                return fs_fail(r, e, "remove", c.path);
        return agent_respond(r, 204, NULL, NULL, 0);
}

/* ---- /v1/files: envd's /files handlers, with the native ?user= ---- */

/* envd's handlers take the user as ?username=; the native API names it ?user= and allows only
 * "user" or "root". The query the handler sees gets username= first (the first value wins). */
static int with_user(struct agent_request *r, int (*handler)(struct agent_request *r))
{
        _cleanup_free_ char *uq = native_query(r, "user"), *query = NULL;
        const char *user, *saved = r->head.query;
        if (native_user_name(uq, &user) < 0)
                return native_error(r, 400, "bad_request", "user must be \"user\" or \"root\"");
        if (!user)
                return handler(r);
        if (asprintf(&query, "username=%s%s%s", user, saved && *saved ? "&" : "",
                     saved ? saved : "") < 0)
                return native_error(r, 500, "internal", "out of memory");
        r->head.query = query;
        int e = handler(r);
        r->head.query = saved;
        return e;
}

int native_files_handle_get(struct agent_request *r)
{
        return with_user(r, agent_files_handle_get);
}

int native_files_handle_put(struct agent_request *r)
{
        return with_user(r, agent_files_handle_post);
}
