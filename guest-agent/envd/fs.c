/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/fs-check.h"
#include "envd/dirs.h"
#include "envd/entry.h"
#include "core/path.h"
#include "connect.h"
#include "macros.h"
#include "json-util.h"

#define LISTDIR_MAX_ENTRIES 100000u
#define LISTDIR_MAX_DEPTH   64u
#define REMOVE_MAX_DEPTH    512u

const char *agent_fs_errno_code(int err)
{
        switch (err < 0 ? -err : err) {
        case ENOENT:
        case ENOTDIR:
                return "not_found";
        case EACCES:
        case EPERM:
        case EROFS:
                return "permission_denied";
        case ELOOP:
                return "failed_precondition";
        case ENAMETOOLONG:
        case EINVAL:
        case EISDIR:
        case EXDEV:
        case ENOTEMPTY:
                return "invalid_argument";
        case EEXIST:
                return "already_exists";
        case ENOSPC:
        case EDQUOT:
        case EMFILE:
        case ENFILE:
        case ENOMEM:
                return "resource_exhausted";
        default:
                return "internal";
        }
}

/* A JSON string escape for NUL would silently cut a C string short: refuse it. */
static bool has_escaped_nul(const uint8_t *b, size_t len)
{
        for (size_t i = 0; i + 6 <= len; i++)
                if (b[i] == '\\' && b[i + 1] == 'u' && b[i + 2] == '0' && b[i + 3] == '0' &&
                    b[i + 4] == '0' && b[i + 5] == '0')
                        return true;
        return false;
}

static int answer(struct agent_request *r, bool stream, const char *code, const char *msg,
                  const char *arg)
{
        if (stream)
                return agent_respond_stream_error(r, code, "%s%s", msg, arg ? arg : "");
        return agent_respond_connect_error(r, code, "%s%s", msg, arg ? arg : "");
}

static int read_message(struct agent_request *r, bool stream, uint8_t **ret, size_t *ret_len,
                        const uint8_t **ret_msg, size_t *ret_msg_len)
{
        size_t max = CONNECT_MAX_MESSAGE + (stream ? CONNECT_ENVELOPE_HEADER_SIZE : 0);
        int e = agent_request_read_body_all(r, max, ret, ret_len);

        if (e < 0)
                return e;
        *ret_msg = *ret;
        *ret_msg_len = *ret_len;
        if (stream) {
                const uint8_t *m;
                uint32_t ml;
                uint8_t flags;
                long n =
                    connect_envelope_parse(*ret, *ret_len, CONNECT_MAX_MESSAGE, &flags, &m, &ml);
                if (n <= 0 || (size_t)n != *ret_len || flags != 0)
                        return -EBADMSG;
                *ret_msg = m;
                *ret_msg_len = ml;
        }
        return 0;
}

int agent_fs_request(struct agent_request *r, bool stream, cJSON **ret_root, struct agent_user *u,
                     const char *field, char **ret_path)
{
        _cleanup_free_ uint8_t *body = NULL;
        _cleanup_free_ char *name = NULL, *workdir = NULL;
        const uint8_t *msg;
        size_t len, mlen;
        cJSON *root;
        const cJSON *p;
        int e;

        e = read_message(r, stream, &body, &len, &msg, &mlen);
        if (e == -EMSGSIZE)
                return answer(r, stream, "resource_exhausted", "request too large", NULL);
        if (e == -EBADMSG)
                return answer(r, stream, "invalid_argument",
                              "request must be one uncompressed envelope", NULL);
        if (e < 0)
                return e;
        if (has_escaped_nul(msg, mlen))
                return answer(r, stream, "invalid_argument", "path contains a NUL byte", NULL);
        e = agent_request_user(r, NULL, u, &name);
        if (e == -ENOENT || e == -EINVAL) {
                _cleanup_free_ char *quoted = NULL;
                if (asprintf(&quoted, "'%s'", name ? name : "") < 0)
                        return -ENOMEM;
                return answer(r, stream, "unauthenticated", "invalid username: ", quoted);
        }
        if (e < 0)
                return answer(r, stream, "internal", "user lookup failed", NULL);
        root = cJSON_ParseWithLength((const char *)msg, mlen);
        if (!cJSON_IsObject(root)) {
                cJSON_Delete(root);
                return answer(r, stream, "invalid_argument", "invalid JSON request", NULL);
        }
        *ret_root = root;
        if (!field)
                return 1;
        p = cJSON_GetObjectItemCaseSensitive(root, field);
        if (p && !cJSON_IsString(p))
                return answer(r, stream, "invalid_argument", "field must be a string: ", field);
        if (agent_config_default_workdir(&workdir) < 0)
                return answer(r, stream, "internal", "out of memory", NULL);
        e = agent_path_resolve(p ? p->valuestring : "", u->home, workdir, ret_path);
        if (e < 0)
                return answer(r, stream, "invalid_argument",
                              "invalid path: ", p ? p->valuestring : "");
        if (strlen(*ret_path) >= PATH_MAX)
                return answer(r, stream, "invalid_argument", "path is too long", NULL);
        return 1;
}

/* st: path's lstat when the caller has it (through a dirfd: envd's answer for a directory it
 * created where the user cannot look up the path), else NULL. */
static int respond_entry(struct agent_request *r, const char *path, const struct stat *st,
                         const char *what)
{
        _cleanup_(agent_idmap_freep) struct agent_idmap *ids = NULL;
        _cleanup_json_ cJSON *root = cJSON_CreateObject();
        _cleanup_free_ char *json = NULL;
        cJSON *entry;
        int e;

        if (!root || agent_idmap_load(&ids) < 0)
                return agent_respond_connect_error(r, "internal", "out of memory");
        e = agent_entry_info(path, st, ids, &entry);
        if (e < 0)
                return agent_respond_connect_error(r, agent_fs_errno_code(e), "%s '%s': %s", what,
                                                   path, strerror(-e));
        cJSON_AddItemToObject(root, "entry", entry);
        if (!(json = cJSON_PrintUnformatted(root)))
                return -ENOMEM;
        return agent_respond(r, 200, "application/json", json, strlen(json));
}

static int fs_stat(struct agent_request *r, const char *path)
{
        int e = agent_fs_check_path(path, false);
        if (e < 0)
                return agent_respond_connect_error(r, agent_fs_errno_code(e),
                                                   "error getting file info for '%s': %s", path,
                                                   strerror(-e));
        return respond_entry(r, path, NULL, "error getting file info for");
}

static int fs_make_dir(struct agent_request *r, const struct agent_user *u, char *path)
{
        struct stat st;
        int e;

        if (stat(path, &st) == 0) {
                if (S_ISDIR(st.st_mode))
                        return agent_respond_connect_error(r, "already_exists",
                                                           "directory already exists: %s", path);
                return agent_respond_connect_error(
                    r, "invalid_argument", "path already exists but it is not a directory: %s",
                    path);
        }
        /* envd: EnsureDirs, the directories owned by the user (envd/dirs.h). */
        _cleanup_close_ int dfd = -EBADF;
        e = agent_fs_ensure_dirs(u, path, &dfd);
        if (e == 0)
                return agent_respond_connect_error(r, "already_exists",
                                                   "directory already exists: %s", path);
        if (e == -ENOTDIR)
                return agent_respond_connect_error(r, "invalid_argument",
                                                   "a parent of '%s' is not a directory", path);
        if (e < 0)
                return agent_respond_connect_error(r, agent_fs_errno_code(e),
                                                   "error creating directory '%s': %s", path,
                                                   strerror(-e));
        if (fstat(dfd, &st) < 0)
                return agent_respond_connect_error(r, "internal", "error getting file info: %m");
        return respond_entry(r, path, &st, "error getting file info for");
}

static int fs_move(struct agent_request *r, const cJSON *root, const struct agent_user *u,
                   const char *source)
{
        _cleanup_free_ char *dest = NULL, *workdir = NULL, *parent = NULL;
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "destination");
        _cleanup_close_ int pfd = -EBADF;
        struct stat st;
        int e;

        if (!cJSON_IsString(d) || !*d->valuestring)
                return agent_respond_connect_error(r, "invalid_argument",
                                                   "destination is required");
        if (agent_config_default_workdir(&workdir) < 0 ||
            agent_path_resolve(d->valuestring, u->home, workdir, &dest) < 0)
                return agent_respond_connect_error(r, "invalid_argument",
                                                   "invalid destination '%s'", d->valuestring);
        if (strlen(dest) >= PATH_MAX)
                return agent_respond_connect_error(r, "invalid_argument", "path is too long");
        if (!(parent = strdup(dest)))
                return -ENOMEM;
        *strrchr(parent, '/') = 0;
        if ((e = agent_fs_ensure_dirs(u, *parent ? parent : "/", &pfd)) < 0)
                return agent_respond_connect_error(r, agent_fs_errno_code(e),
                                                   "error creating directory '%s': %s", parent,
                                                   strerror(-e));
        /* Into the parent's fd: the parent is reachable even where only the sandbox's root could
         * look it up (envd/dirs.h). */
        if (renameat(AT_FDCWD, source, pfd, agent_path_basename(dest)) < 0) {
                e = negative_errno();
                if (e == -ENOENT)
                        return agent_respond_connect_error(r, "not_found",
                                                           "source file not found: %s", source);
                return agent_respond_connect_error(r, agent_fs_errno_code(e),
                                                   "error renaming '%s' to '%s': %s", source, dest,
                                                   strerror(-e));
        }
        if (fstatat(pfd, agent_path_basename(dest), &st, AT_SYMLINK_NOFOLLOW) < 0)
                return agent_respond_connect_error(r, "internal", "error getting file info: %m");
        return respond_entry(r, dest, &st, "error getting file info for");
}

/* rm -rf below dirfd/name without following symlinks. */
static int remove_at(int parent, const char *name, unsigned depth)
{
        _cleanup_close_ int fd = -EBADF;
        DIR *d;
        struct dirent *de;
        int e = 0;

        if (unlinkat(parent, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return negative_errno();
        if (depth > REMOVE_MAX_DEPTH)
                return -ELOOP;
        fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOTDIR ? -EPERM : negative_errno();
        d = fdopendir(fd);
        if (!d)
                return negative_errno();
        fd = -EBADF; /* owned by d now */
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                int k = remove_at(dirfd(d), de->d_name, depth + 1);
                if (k < 0 && e == 0)
                        e = k;
        }
        closedir(d);
        if (e < 0)
                return e;
        if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}

static int fs_remove(struct agent_request *r, const char *path)
{
        int e;
        if (strcmp(path, "/") == 0)
                return agent_respond_connect_error(r, "invalid_argument", "cannot remove '/'");
        e = remove_at(AT_FDCWD, path, 0);
        if (e < 0)
                return agent_respond_connect_error(r, agent_fs_errno_code(e),
                                                   "error removing file or directory '%s': %s",
                                                   path, strerror(-e));
        return agent_respond(r, 200, "application/json", "{}", 2);
}

/* ---- ListDir ---- */

struct walk {
        cJSON *entries;
        const struct agent_idmap *ids;
        unsigned depth;
        unsigned count;
};

static int name_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strv_free_n(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

/* Sorted names of a directory (as Go's WalkDir visits them). */
static int read_names(const char *dir, char ***ret, size_t *ret_n)
{
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), e;
        struct dirent *de;
        char **v = NULL;
        size_t n = 0, cap = 0;
        DIR *d;

        if (fd < 0)
                return negative_errno();
        if ((e = agent_fs_check_fd(fd)) < 0 || !(d = fdopendir(fd))) {
                e = e < 0 ? e : negative_errno();
                close(fd);
                return e;
        }
        while ((de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (n == cap) {
                        char **nv = realloc(v, (cap = cap ? cap * 2 : 32) * sizeof(char *));
                        if (!nv)
                                goto oom;
                        v = nv;
                }
                if (!(v[n] = strdup(de->d_name)))
                        goto oom;
                n++;
                if (n > LISTDIR_MAX_ENTRIES)
                        break;
        }
        closedir(d);
        if (n)
                qsort(v, n, sizeof(char *), name_cmp);
        *ret = v;
        *ret_n = n;
        return 0;
oom:
        closedir(d);
        strv_free_n(v, n);
        return -ENOMEM;
}

static int walk_dir(struct walk *w, const char *dir, unsigned level)
{
        char **names = NULL;
        size_t n = 0;
        int e = read_names(dir, &names, &n);

        if (e < 0)
                return level == 1 ? e : 0; /* unreadable subdirectories are skipped */
        for (size_t i = 0; i < n && e == 0; i++) {
                _cleanup_free_ char *path = NULL;
                struct stat st;
                cJSON *entry;

                if (++w->count > LISTDIR_MAX_ENTRIES) {
                        e = -E2BIG;
                        break;
                }
                if (asprintf(&path, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir, names[i]) < 0) {
                        e = -ENOMEM;
                        break;
                }
                if (lstat(path, &st) < 0)
                        continue; /* vanished meanwhile */
                if ((e = agent_entry_info(path, &st, w->ids, &entry)) < 0)
                        break;
                cJSON_AddItemToArray(w->entries, entry);
                if (S_ISDIR(st.st_mode) && level < w->depth)
                        e = walk_dir(w, path, level + 1);
        }
        strv_free_n(names, n);
        return e;
}

static int fs_list_dir(struct agent_request *r, const cJSON *root, const char *path)
{
        _cleanup_(agent_idmap_freep) struct agent_idmap *ids = NULL;
        _cleanup_json_ cJSON *out = cJSON_CreateObject();
        _cleanup_free_ char *resolved = NULL, *json = NULL;
        const cJSON *dj = cJSON_GetObjectItemCaseSensitive(root, "depth");
        struct walk w = {0};
        struct stat st;
        int e;

        w.depth = 1;
        if (cJSON_IsNumber(dj) && dj->valuedouble >= 1)
                w.depth = dj->valuedouble > LISTDIR_MAX_DEPTH ? LISTDIR_MAX_DEPTH
                                                              : (unsigned)dj->valuedouble;
        if (!out || agent_idmap_load(&ids) < 0 ||
            !(w.entries = cJSON_AddArrayToObject(out, "entries")))
                return agent_respond_connect_error(r, "internal", "out of memory");
        w.ids = ids;
        /* A magic link on the way is refused before realpath follows it. */
        if ((e = agent_fs_check_path(path, true)) < 0 || !(resolved = realpath(path, NULL))) {
                e = e < 0 ? e : negative_errno();
                if (e == -ELOOP)
                        return agent_respond_connect_error(
                            r, "failed_precondition", "cyclic symlink or chain >255 links at '%s'",
                            path);
                return agent_respond_connect_error(r, agent_fs_errno_code(e),
                                                   "path not found: '%s': %s", path, strerror(-e));
        }
        if (stat(resolved, &st) < 0 || !S_ISDIR(st.st_mode))
                return agent_respond_connect_error(r, "invalid_argument",
                                                   "path is not a directory: %s", path);
        e = walk_dir(&w, resolved, 1);
        if (e == -E2BIG)
                return agent_respond_connect_error(r, "resource_exhausted",
                                                   "directory listing exceeds %u entries",
                                                   LISTDIR_MAX_ENTRIES);
        if (e < 0)
                return agent_respond_connect_error(r, agent_fs_errno_code(e),
                                                   "error reading directory %s: %s", resolved,
                                                   strerror(-e));
        if (cJSON_GetArraySize(w.entries) == 0)
                cJSON_DeleteItemFromObject(out, "entries");
        if (!(json = cJSON_PrintUnformatted(out)))
                return -ENOMEM;
        return agent_respond(r, 200, "application/json", json, strlen(json));
}

enum fs_method { FS_STAT, FS_MAKE_DIR, FS_MOVE, FS_LIST_DIR, FS_REMOVE };

/* A unary RPC: the request, the user and its path, then the method with the user's fs
 * credentials. */
static int fs_unary(struct agent_request *r, enum fs_method m)
{
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_json_ cJSON *root = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_fs_creds_ int creds = 0;
        int e;

        e = agent_fs_request(r, false, &root, &u, m == FS_MOVE ? "source" : "path", &path);
        if (e != 1)
                return e;
        if (agent_fs_become(&u) < 0)
                return agent_respond_connect_error(r, "internal", "cannot switch to user '%s'",
                                                   u.name);
        creds = 1;
        switch (m) {
        case FS_STAT:
                return fs_stat(r, path);
        case FS_MAKE_DIR:
                return fs_make_dir(r, &u, path);
        case FS_MOVE:
                return fs_move(r, root, &u, path);
        case FS_LIST_DIR:
                return fs_list_dir(r, root, path);
        case FS_REMOVE:
                break;
        }
        return fs_remove(r, path);
}

int agent_fs_handle_stat(struct agent_request *r)
{
        return fs_unary(r, FS_STAT);
}

int agent_fs_handle_make_dir(struct agent_request *r)
{
        return fs_unary(r, FS_MAKE_DIR);
}

int agent_fs_handle_move(struct agent_request *r)
{
        return fs_unary(r, FS_MOVE);
}

int agent_fs_handle_list_dir(struct agent_request *r)
{
        return fs_unary(r, FS_LIST_DIR);
}

int agent_fs_handle_remove(struct agent_request *r)
{
        return fs_unary(r, FS_REMOVE);
}
