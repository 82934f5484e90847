/* SPDX-License-Identifier: Apache-2.0 */
/*
 * GET /v1/fs/search and GET /v1/fs/watch, with the user's file-system credentials.
 *
 * search ?path=&name=<glob>&content=<text>&max_results=: a bounded walk (native/native-fs.c's
 * FS_* bounds): no symlinks followed, no other file system entered (like find -xdev), at most
 * FS_SEARCH_VISIT entries visited and FS_SEARCH_DEPTH levels; name is an fnmatch glob on the
 * entry name; content is a plain substring, looked for line by line in the first
 * FS_SEARCH_FILE bytes of regular files without a NUL byte there. Every bound that cut the
 * walk short sets "truncated".
 *
 * watch ?path=&recursive=: text/event-stream of `data: {"type","path"}` events from inotify
 * (create, modify, delete, move_from, move_to, attrib), a `: keepalive` comment every 15 s;
 * at most FS_WATCH_MAX watched directories. Ends when the client leaves.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "core/config.h"
#include "core/fs-check.h"
#include "core/path.h"
#include "core/users.h"
#include "json-util.h"
#include "macros.h"
#include "native/native.h"

#define FS_SEARCH_VISIT   100000u
#define FS_SEARCH_FILE    (1024u * 1024u)
#define FS_SEARCH_DEPTH   32
#define FS_SEARCH_RESULTS 1000
#define FS_LINE_MAX       200
#define FS_WATCH_MAX      1024
#define FS_KEEPALIVE_MS   15000

struct search {
        const char *name, *content;
        unsigned max, found, visited;
        bool truncated;
        dev_t dev;
        cJSON *matches;
};

/* With the user's credentials (or an answered error: returns that, 1 on success). */
static int become(struct agent_request *r, struct agent_user *u, char **ret_path)
{
        _cleanup_free_ char *uq = native_query(r, "user"), *name = NULL, *workdir = NULL;
        _cleanup_free_ char *raw = native_query(r, "path");
        const char *user;
        if (native_user_name(uq, &user) < 0)
                return native_error(r, 400, "bad_request", "user must be \"user\" or \"root\"");
        if (!user && agent_config_default_user(&name) >= 0)
                user = name;
        if (!user || agent_user_lookup(user, u) < 0)
                return native_error(r, 400, "bad_request", "unknown user");
        (void)agent_config_default_workdir(&workdir);
        if (!raw || agent_path_resolve(raw, u->home, workdir, ret_path) < 0)
                return native_error(r, 400, "bad_request", "a valid path is required");
        if (agent_fs_become(u) < 0)
                return native_error(r, 500, "internal", "cannot switch to the user");
        return 1;
}

static void add_match(struct search *s, const char *path, const char *type, long line,
                      const char *text, size_t tlen)
{
        if (s->found >= s->max) {
                s->truncated = true;
                return;
        }
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "path", path);
        cJSON_AddStringToObject(m, "type", type);
        if (text) {
                _cleanup_free_ char *t =
                    native_utf8_dup((const uint8_t *)text, MIN(tlen, (size_t)FS_LINE_MAX));
                cJSON_AddNumberToObject(m, "line", (double)line);
                cJSON_AddStringToObject(m, "text", t ? t : "");
        }
        cJSON_AddItemToArray(s->matches, m);
        s->found++;
}

static void grep_file(struct search *s, int dfd, const char *name, const char *path)
{
        int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return;
        if (agent_fs_check_fd(fd) < 0) {
                close(fd);
                return;
        }
        _cleanup_free_ char *buf = malloc(FS_SEARCH_FILE);
        ssize_t n = buf ? read(fd, buf, FS_SEARCH_FILE) : -1;
        safe_close(fd);
        if (n <= 0 || memchr(buf, 0, (size_t)n))
                return;
        size_t clen = strlen(s->content);
        long line = 1;
        for (char *p = buf, *end = buf + n; p < end && s->found < s->max; line++) {
                char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
                if (memmem(p, l, s->content, clen))
                        add_match(s, path, "file", line, p, l);
                p += l + 1;
        }
}

static void walk(struct search *s, int dfd, const char *dir, int depth)
{
        DIR *d = agent_fs_check_fd(dfd) < 0 ? NULL : fdopendir(dfd);
        struct dirent *de;
        if (!d) {
                safe_close(dfd);
                return;
        }
        while ((de = readdir(d)) && s->found < s->max) {
                struct stat st;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (++s->visited > FS_SEARCH_VISIT) {
                        s->truncated = true;
                        break;
                }
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", de->d_name) < 0)
                        break;
                bool name_ok = !s->name || fnmatch(s->name, de->d_name, 0) == 0;
                if (name_ok && !s->content)
                        add_match(s, path,
                                  S_ISDIR(st.st_mode)   ? "dir"
                                  : S_ISREG(st.st_mode) ? "file"
                                                        : "other",
                                  0, NULL, 0);
                else if (name_ok && S_ISREG(st.st_mode))
                        grep_file(s, dirfd(d), de->d_name, path);
                if (S_ISDIR(st.st_mode) && st.st_dev == s->dev) {
                        if (depth >= FS_SEARCH_DEPTH) {
                                s->truncated = true;
                                continue;
                        }
                        int sub = openat(dirfd(d), de->d_name,
                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub >= 0)
                                walk(s, sub, path, depth + 1);
                }
        }
        closedir(d);
}

int native_fs_handle_search(struct agent_request *r)
{
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_free_ char *path = NULL, *name = native_query(r, "name");
        _cleanup_free_ char *content = native_query(r, "content"),
                            *mx = native_query(r, "max_results");
        _cleanup_fs_creds_ int creds = 0;
        struct stat st;
        int e = become(r, &u, &path);
        if (e != 1)
                return e;
        creds = 1;
        if ((!name || !*name) && (!content || !*content))
                return native_error(r, 400, "bad_request", "give name (a glob) and/or content");
        long max = mx ? strtol(mx, NULL, 10) : 100;
        if (max < 1 || max > FS_SEARCH_RESULTS)
                return native_error(r, 400, "bad_request", "max_results must be 1..%d",
                                    FS_SEARCH_RESULTS);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
                e = -errno;
                safe_close(fd);
                return native_error(r,
                                    e == -ENOENT || e == -ENOTDIR ? 404
                                    : e == -EACCES                ? 403
                                                                  : 400,
                                    e == -ENOENT || e == -ENOTDIR ? "not_found"
                                    : e == -EACCES                ? "forbidden"
                                                                  : "bad_request",
                                    "search %s: %s", path, strerror(-e));
        }
        struct search s = {.name = name && *name ? name : NULL,
                           .content = content && *content ? content : NULL,
                           .max = (unsigned)max,
                           .dev = st.st_dev,
                           .matches = cJSON_CreateArray()};
        walk(&s, fd, path, 0);
        if (s.found >= s.max)
                s.truncated = true; /* stopped at max_results: there may be more */
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToObject(o, "matches", s.matches)) {
                cJSON_Delete(s.matches);
                return native_error(r, 500, "internal", "out of memory");
        }
        if (!cJSON_AddBoolToObject(o, "truncated", s.truncated) ||
            !cJSON_AddNumberToObject(o, "visited", s.visited))
                return native_error(r, 500, "internal", "out of memory");
        return native_json(r, 200, o);
}

/* ---- watch ---- */

struct watch {
        int ifd;
        int wd_path[FS_WATCH_MAX]; /* wd → index into paths */
        char *paths[FS_WATCH_MAX];
        int n;
};

static void watch_add(struct watch *w, const char *path, bool recursive, int depth)
{
        if (w->n >= FS_WATCH_MAX || agent_fs_check_path(path, false) < 0)
                return;
        int wd = inotify_add_watch(w->ifd, path,
                                   IN_CREATE | IN_MODIFY | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO |
                                       IN_ATTRIB | IN_ONLYDIR | IN_DONT_FOLLOW);
        if (wd < 0)
                return;
        w->wd_path[w->n] = wd;
        w->paths[w->n++] = strdup(path);
        if (!recursive || depth >= FS_SEARCH_DEPTH)
                return;
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && (de = readdir(d)))
                if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
                        _cleanup_free_ char *sub = NULL;
                        if (asprintf(&sub, "%s%s%s", path, strcmp(path, "/") ? "/" : "",
                                     de->d_name) >= 0)
                                watch_add(w, sub, recursive, depth + 1);
                }
        if (d)
                closedir(d);
}

static const char *event_type(uint32_t m)
{
        return m & IN_CREATE       ? "create"
               : m & IN_DELETE     ? "delete"
               : m & IN_MOVED_FROM ? "move_from"
               : m & IN_MOVED_TO   ? "move_to"
               : m & IN_MODIFY     ? "modify"
                                   : "attrib";
}

static int watch_events(struct agent_request *r, struct watch *w, bool recursive)
{
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));
        ssize_t n = read(w->ifd, buf, sizeof(buf));
        for (char *p = buf; n > 0 && p < buf + n;) {
                struct inotify_event *ev = (struct inotify_event *)p;
                p += sizeof(*ev) + ev->len;
                const char *dir = NULL;
                for (int i = 0; i < w->n; i++)
                        if (w->wd_path[i] == ev->wd)
                                dir = w->paths[i];
                if (!dir || !ev->len)
                        continue;
                _cleanup_free_ char *path = NULL, *j = NULL;
                _cleanup_json_ cJSON *o = cJSON_CreateObject();
                _cleanup_(buf_done) struct buf line = {0};
                if (asprintf(&path, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", ev->name) < 0)
                        return -ENOMEM;
                if (recursive && (ev->mask & (IN_CREATE | IN_MOVED_TO)) && (ev->mask & IN_ISDIR))
                        watch_add(w, path, true, 0);
                if (!o || !cJSON_AddStringToObject(o, "type", event_type(ev->mask)) ||
                    !cJSON_AddStringToObject(o, "path", path) ||
                    !cJSON_AddBoolToObject(o, "is_dir", ev->mask & IN_ISDIR) ||
                    !(j = cJSON_PrintUnformatted(o)) || buf_printf(&line, "data: %s\n\n", j) < 0)
                        return -ENOMEM;
                int e = agent_respond_data(r, line.p, line.len);
                if (e < 0)
                        return e;
        }
        return 0;
}

int native_fs_handle_watch(struct agent_request *r)
{
        static const char *const hs[] = {"Content-Type", "text/event-stream", "Cache-Control",
                                         "no-cache", NULL};
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_free_ char *path = NULL, *rec = native_query(r, "recursive");
        _cleanup_fs_creds_ int creds = 0;
        struct watch w = {.ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK)};
        bool recursive = rec && (strcmp(rec, "true") == 0 || strcmp(rec, "1") == 0);
        int e = become(r, &u, &path);
        if (e != 1)
                goto out;
        creds = 1;
        struct stat st;
        if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
                e = native_error(r, 404, "not_found", "%s is not a directory", path);
                goto out;
        }
        watch_add(&w, path, recursive, 0);
        if (w.n == 0) {
                e = native_error(r, 403, "forbidden", "cannot watch %s", path);
                goto out;
        }
        e = agent_respond_head(r, 200, hs);
        if (e >= 0)
                e = agent_respond_data(r, ": watching\n\n", 12);
        while (e >= 0) {
                struct pollfd p[2] = {{.fd = w.ifd, .events = POLLIN},
                                      {.fd = r->fd, .events = POLLRDHUP}};
                int n = poll(p, 2, FS_KEEPALIVE_MS);
                if (n < 0 && errno != EINTR) {
                        e = negative_errno();
                        break;
                }
                if (p[1].revents) {
                        e = -ECONNRESET; /* the client left: the stream has no end to send */
                        break;
                }
                if (p[0].revents)
                        e = watch_events(r, &w, recursive);
                else if (n == 0)
                        e = agent_respond_data(r, ": keepalive\n\n", 13);
        }
out:
        for (int i = 0; i < w.n; i++)
                free(w.paths[i]);
        safe_close(w.ifd);
        return e;
}
