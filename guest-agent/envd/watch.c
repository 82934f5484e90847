/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/watch.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fs-check.h"
#include "envd/connect-json.h"
#include "envd/entry.h"
#include "envd/fs.h"
#include "connect.h"
#include "fd-util.h"
#include "macros.h"
#include "random-util.h"
#include "thread-util.h"
#include "json-util.h"
#include "time-util.h"

#define WATCH_MASK                                                                                 \
        (IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_MODIFY | IN_ATTRIB | IN_DELETE |             \
         IN_ONLYDIR | IN_DONT_FOLLOW)
#define DEFAULT_KEEPALIVE_S 90
#define WATCH_MAX_DEPTH     64 /* recursion bound (the stack), below a directory being added */

struct watch_dir {
        int wd;
        char *rel; /* relative to the root, "" for the root */
};

struct watch {
        int fd; /* inotify */
        char *root;
        bool recursive;
        bool include_entry;
        struct watch_dir *dirs;
        size_t n_dirs;
        /* polling watchers only */
        char id[40];
        char *owner;  /* the user whose fs credentials the watch works with */
        cJSON *queue; /* array of FilesystemEvent */
        bool overflowed;
        struct watch *next;
};

static void watch_free(struct watch *w)
{
        if (!w)
                return;
        safe_close(w->fd);
        for (size_t i = 0; i < w->n_dirs; i++)
                free(w->dirs[i].rel);
        free(w->dirs);
        free(w->root);
        free(w->owner);
        if (w->queue)
                cJSON_Delete(w->queue);
        free(w);
}

static void watch_freep(struct watch **w)
{
        watch_free(*w);
}

static int watch_add_dir(struct watch *w, const char *rel, unsigned level)
{
        _cleanup_free_ char *path = NULL, *r = strdup(rel);
        struct watch_dir *nd;
        int wd;

        if (!r)
                return -ENOMEM;
        if (w->n_dirs >= AGENT_WATCH_MAX_DIRS)
                return -ENOSPC;
        if (asprintf(&path, "%s%s%s", w->root, *rel ? "/" : "", rel) < 0)
                return -ENOMEM;
        int e = agent_fs_check_path(path, true);
        if (e < 0)
                return e;
        wd = inotify_add_watch(w->fd, path, WATCH_MASK);
        if (wd < 0)
                return negative_errno();
        for (size_t i = 0; i < w->n_dirs; i++)
                if (w->dirs[i].wd == wd)
                        return 0; /* same inode seen again */
        nd = realloc(w->dirs, (w->n_dirs + 1) * sizeof(*nd));
        if (!nd)
                return -ENOMEM;
        w->dirs = nd;
        w->dirs[w->n_dirs++] = (struct watch_dir){.wd = wd, .rel = TAKE_PTR(r)};
        if (!w->recursive || level >= WATCH_MAX_DEPTH)
                return 0;

        /* Subdirectories (not following symlinks). */
        DIR *d = opendir(path);
        struct dirent *de;
        if (!d)
                return 0;
        while (e >= 0 && (de = readdir(d))) {
                _cleanup_free_ char *sub = NULL;
                struct stat st;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !S_ISDIR(st.st_mode))
                        continue;
                if (asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name) < 0)
                        e = -ENOMEM;
                else if ((e = watch_add_dir(w, sub, level + 1)) == -EACCES || e == -ENOENT)
                        e = 0;
        }
        closedir(d);
        return e;
}

static const char *watch_rel(const struct watch *w, int wd)
{
        for (size_t i = 0; i < w->n_dirs; i++)
                if (w->dirs[i].wd == wd)
                        return w->dirs[i].rel;
        return NULL;
}

static int watch_open(const char *root, bool recursive, bool include_entry, struct watch **ret)
{
        _cleanup_(watch_freep) struct watch *w = calloc(1, sizeof(*w));
        int e;

        if (!w)
                return -ENOMEM;
        w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (w->fd < 0)
                return negative_errno();
        if (!(w->root = strdup(root)))
                return -ENOMEM;
        w->recursive = recursive;
        w->include_entry = include_entry;
        e = watch_add_dir(w, "", 0);
        if (e < 0)
                return e;
        *ret = TAKE_PTR(w);
        return 0;
}

typedef int (*event_cb)(void *userdata, cJSON *event);

static int emit(struct watch *w, const char *name, const char *type, event_cb cb, void *ud)
{
        cJSON *ev = cJSON_CreateObject();
        if (!ev || !cJSON_AddStringToObject(ev, "name", name) ||
            !cJSON_AddStringToObject(ev, "type", type)) {
                cJSON_Delete(ev);
                return -ENOMEM;
        }
        if (w->include_entry) {
                _cleanup_free_ char *full = NULL;
                cJSON *entry;
                if (asprintf(&full, "%s/%s", strcmp(w->root, "/") == 0 ? "" : w->root, name) >= 0 &&
                    agent_entry_info(full, NULL, NULL, &entry) == 0)
                        cJSON_AddItemToObject(ev, "entry", entry);
        }
        return cb(ud, ev);
}

/* A directory that appeared under a recursive watch gets its inotify watch only once its
 * creation is read, so what was made in it before (mkdir d/n then a write to d/n/f.txt, the
 * usual sequence) would never be reported: its entries are reported as found, a file that
 * has content as created and written, as if the watch had been there (E2B's watcher reports
 * the nested file's write). */
static int emit_tree(struct watch *w, const char *rel, unsigned level, event_cb cb, void *ud)
{
        _cleanup_free_ char *path = NULL;
        if (level >= WATCH_MAX_DEPTH || asprintf(&path, "%s/%s", w->root, rel) < 0)
                return level >= WATCH_MAX_DEPTH ? 0 : -ENOMEM;
        if (agent_fs_check_path(path, true) < 0)
                return 0;
        DIR *d = opendir(path);
        if (!d)
                return 0;
        struct dirent *de;
        int e = 0;
        while (e >= 0 && (de = readdir(d))) {
                _cleanup_free_ char *sub = NULL;
                struct stat st;
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (asprintf(&sub, "%s/%s", rel, de->d_name) < 0) {
                        e = -ENOMEM;
                        break;
                }
                e = emit(w, sub, "EVENT_TYPE_CREATE", cb, ud);
                if (e >= 0 && S_ISREG(st.st_mode) && st.st_size > 0)
                        e = emit(w, sub, "EVENT_TYPE_WRITE", cb, ud);
                if (e >= 0 && S_ISDIR(st.st_mode))
                        e = emit_tree(w, sub, level + 1, cb, ud);
        }
        closedir(d);
        return e;
}

/* Read what inotify has queued and hand each FilesystemEvent to cb. */
static int watch_drain(struct watch *w, event_cb cb, void *ud)
{
        char buf[16384] __attribute__((aligned(__alignof__(struct inotify_event))));

        for (;;) {
                ssize_t n = read(w->fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return 0;
                if (n <= 0)
                        return n < 0 ? negative_errno() : -EIO;
                for (char *p = buf; p < buf + n;) {
                        struct inotify_event *ie = (struct inotify_event *)p;
                        const char *rel = watch_rel(w, ie->wd);
                        _cleanup_free_ char *name = NULL;
                        int e = 0;

                        p += sizeof(*ie) + ie->len;
                        if (ie->mask & IN_Q_OVERFLOW)
                                w->overflowed = true;
                        if (!rel || ie->len == 0 || !ie->name[0])
                                continue;
                        if (asprintf(&name, "%s%s%s", rel, *rel ? "/" : "", ie->name) < 0)
                                return -ENOMEM;
                        bool new_dir = w->recursive && (ie->mask & (IN_CREATE | IN_MOVED_TO)) &&
                                       (ie->mask & IN_ISDIR);
                        if (new_dir)
                                (void)watch_add_dir(w, name, 0);
                        if (ie->mask & (IN_CREATE | IN_MOVED_TO))
                                e = emit(w, name, "EVENT_TYPE_CREATE", cb, ud);
                        if (e >= 0 && new_dir)
                                e = emit_tree(w, name, 0, cb, ud);
                        if (e >= 0 && (ie->mask & IN_MOVED_FROM))
                                e = emit(w, name, "EVENT_TYPE_RENAME", cb, ud);
                        if (e >= 0 && (ie->mask & IN_ATTRIB))
                                e = emit(w, name, "EVENT_TYPE_CHMOD", cb, ud);
                        if (e >= 0 && (ie->mask & IN_MODIFY))
                                e = emit(w, name, "EVENT_TYPE_WRITE", cb, ud);
                        if (e >= 0 && (ie->mask & IN_DELETE))
                                e = emit(w, name, "EVENT_TYPE_REMOVE", cb, ud);
                        if (e < 0)
                                return e;
                }
        }
}

/* Resolve, check and open a watch for a WatchDir/CreateWatcher request. 1 on success, else
 * the error was answered. */
static int watch_request(struct agent_request *r, bool stream, struct watch **ret)
{
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_json_ cJSON *root = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_fs_creds_ int creds = 0;
        struct stat st;
        int e;

        e = agent_fs_request(r, stream, &root, &u, "path", &path);
        if (e != 1)
                return e;
        if (agent_fs_become(&u) < 0)
                return stream ? agent_respond_stream_error(r, "internal", "cannot switch user")
                              : agent_respond_connect_error(r, "internal", "cannot switch user");
        creds = 1;
        if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) {
                const char *code = "invalid_argument";
                if (stat(path, &st) < 0)
                        code = agent_fs_errno_code(-errno);
                return stream ? agent_respond_stream_error(r, code, "cannot watch '%s'", path)
                              : agent_respond_connect_error(r, code, "cannot watch '%s'", path);
        }
        e = watch_open(path, cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "recursive")),
                       cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "includeEntry")) ||
                           cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "include_entry")),
                       ret);
        if (e < 0) {
                const char *code =
                    e == -ENOSPC || e == -EMFILE ? "resource_exhausted" : agent_fs_errno_code(e);
                return stream ? agent_respond_stream_error(r, code, "error watching '%s': %s", path,
                                                           strerror(-e))
                              : agent_respond_connect_error(r, code, "error watching '%s': %s",
                                                            path, strerror(-e));
        }
        if (!((*ret)->owner = strdup(u.name))) {
                watch_free(TAKE_PTR(*ret));
                return stream ? agent_respond_stream_error(r, "internal", "out of memory")
                              : agent_respond_connect_error(r, "internal", "out of memory");
        }
        return 1;
}

/* Work with the watch owner's fs credentials (new subdirectories, includeEntry stats). */
static int watch_become(const struct watch *w, struct agent_user *u)
{
        int e = agent_user_lookup(w->owner, u);
        return e < 0 ? e : agent_fs_become(u);
}

/* ---- WatchDir (server stream) ---- */

static int header_int(struct agent_request *r, const char *name, long def, long max)
{
        const char *s = agent_request_header(r, name);
        char *end;
        long v;
        if (!s)
                return (int)def;
        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v <= 0)
                return (int)def;
        return (int)MIN(v, max);
}

static int send_json(struct agent_request *r, const char *json)
{
        return agent_respond_envelope(r, 0, json, strlen(json));
}

static int stream_event(void *userdata, cJSON *ev)
{
        struct agent_request *r = userdata;
        _cleanup_json_ cJSON *root = cJSON_CreateObject();
        _cleanup_free_ char *json = NULL;

        if (!root) {
                cJSON_Delete(ev);
                return -ENOMEM;
        }
        cJSON_AddItemToObject(root, "filesystem", ev);
        if (!(json = cJSON_PrintUnformatted(root)))
                return -ENOMEM;
        return send_json(r, json);
}

static bool client_gone(struct agent_request *r)
{
        char c;
        ssize_t n = recv(r->fd, &c, 1, MSG_DONTWAIT);
        return !(n < 0 && (errno == EAGAIN || errno == EINTR));
}

int agent_watch_handle_dir(struct agent_request *r)
{
        static const char *const headers[] = {"Content-Type", "application/connect+json", NULL};
        _cleanup_(watch_freep) struct watch *w = NULL;
        int keepalive_ms =
            header_int(r, "Keepalive-Ping-Interval", DEFAULT_KEEPALIVE_S, 86400) * 1000;
        int timeout = header_int(r, "Connect-Timeout-Ms", 0, INT32_MAX);
        int64_t deadline = timeout > 0 ? now_ms() + timeout : 0, next_ka;
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_fs_creds_ int creds = 0;
        int e;

        e = watch_request(r, true, &w);
        if (e != 1)
                return e;
        if (watch_become(w, &u) < 0)
                return agent_respond_stream_error(r, "internal", "cannot switch user");
        creds = 1;
        if ((e = agent_respond_head(r, 200, headers)) < 0 ||
            (e = send_json(r, "{\"start\":{}}")) < 0)
                return e;
        next_ka = now_ms() + keepalive_ms;
        for (;;) {
                struct pollfd pfd[2] = {{.fd = w->fd, .events = POLLIN},
                                        {.fd = r->fd, .events = POLLIN | POLLRDHUP}};
                int64_t now = now_ms(), wait = next_ka - now;

                if (deadline && now >= deadline)
                        return agent_respond_stream_error(r, "deadline_exceeded",
                                                          "watch timeout exceeded");
                if (deadline && deadline - now < wait)
                        wait = deadline - now;
                if (wait <= 0) {
                        if ((e = send_json(r, "{\"keepalive\":{}}")) < 0)
                                return e;
                        next_ka = now_ms() + keepalive_ms;
                        continue;
                }
                if (poll(pfd, 2, (int)wait) < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (pfd[1].revents && client_gone(r))
                        return -ECONNRESET; /* the stream had no end to send */
                if (pfd[0].revents) {
                        if ((e = watch_drain(w, stream_event, r)) < 0)
                                return e == -ENOMEM ? agent_respond_stream_error(r, "internal",
                                                                                 "out of memory")
                                                    : e;
                        next_ka = now_ms() + keepalive_ms;
                }
        }
}

/* ---- polling watchers ---- */

static pthread_mutex_t watchers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watch *watchers;
static unsigned n_watchers;

static int queue_event(void *userdata, cJSON *ev)
{
        struct watch *w = userdata;
        if ((unsigned)cJSON_GetArraySize(w->queue) >= AGENT_WATCHER_MAX_EVENTS) {
                w->overflowed = true;
                cJSON_Delete(ev);
                return 0;
        }
        cJSON_AddItemToArray(w->queue, ev);
        return 0;
}

/* Polling watchers are drained as things happen, not only when polled: a recursive watch
 * must add a new directory's inotify watch before what is made in it is missed (envd's
 * watchers run all the time as well). One thread for all of them; each drain under the
 * watcher owner's fs credentials, as GetWatcherEvents does. */
#define WATCHERS_DRAIN_POLL_MS 200

static void drain_ready(const struct pollfd *pfd, size_t n)
{
        for (struct watch *w = watchers; w; w = w->next) {
                bool ready = false;
                for (size_t i = 0; i < n; i++)
                        ready |= pfd[i].fd == w->fd && (pfd[i].revents & POLLIN);
                if (!ready)
                        continue;
                _cleanup_(agent_user_done) struct agent_user owner = {0};
                _cleanup_fs_creds_ int creds = watch_become(w, &owner) >= 0;
                if (creds)
                        (void)watch_drain(w, queue_event, w);
        }
}

static void *watchers_drain_main(void *arg)
{
        (void)arg;
        for (;;) {
                struct pollfd pfd[AGENT_WATCHERS_MAX];
                size_t n = 0;
                pthread_mutex_lock(&watchers_lock);
                for (struct watch *w = watchers; w && n < AGENT_WATCHERS_MAX; w = w->next)
                        pfd[n++] = (struct pollfd){.fd = w->fd, .events = POLLIN};
                pthread_mutex_unlock(&watchers_lock);
                /* a watcher removed meanwhile: its fd is matched against the list again below,
                 * under the lock, before anything is read */
                if (poll(pfd, n, WATCHERS_DRAIN_POLL_MS) <= 0)
                        continue;
                pthread_mutex_lock(&watchers_lock);
                drain_ready(pfd, n);
                pthread_mutex_unlock(&watchers_lock);
        }
        return NULL;
}

static void watchers_drain_start(void)
{
        if (thread_start_detached(watchers_drain_main, NULL, 0) < 0)
                fprintf(stderr, "sbx-agent: the watchers' drain thread did not start\n");
}

int agent_watch_handle_create(struct agent_request *r)
{
        static pthread_once_t drain_once = PTHREAD_ONCE_INIT;
        struct watch *w = NULL;
        char hex[33], json[96];
        int e;

        e = watch_request(r, false, &w);
        if (e != 1)
                return e;
        if (random_hex(hex, 16) < 0 || !(w->queue = cJSON_CreateArray())) {
                watch_free(w);
                return agent_respond_connect_error(r, "internal", "out of memory");
        }
        snprintf(w->id, sizeof(w->id), "%s", hex);
        pthread_mutex_lock(&watchers_lock);
        if (n_watchers >= AGENT_WATCHERS_MAX) {
                pthread_mutex_unlock(&watchers_lock);
                watch_free(w);
                return agent_respond_connect_error(
                    r, "resource_exhausted", "too many watchers (max %u)", AGENT_WATCHERS_MAX);
        }
        w->next = watchers;
        watchers = w;
        n_watchers++;
        pthread_mutex_unlock(&watchers_lock);
        pthread_once(&drain_once, watchers_drain_start);
        snprintf(json, sizeof(json), "{\"watcherId\":\"%s\"}", w->id);
        return agent_respond(r, 200, "application/json", json, strlen(json));
}

static const char *watcher_id(const cJSON *root)
{
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(root, "watcherId");
        if (!id)
                id = cJSON_GetObjectItemCaseSensitive(root, "watcher_id");
        return cJSON_IsString(id) ? id->valuestring : "";
}

static int watcher_rpc(struct agent_request *r, bool remove)
{
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_json_ cJSON *root = NULL, *out = NULL;
        _cleanup_free_ char *json = NULL;
        struct watch *w = NULL;
        const char *id;
        int e;

        e = agent_fs_request(r, false, &root, &u, NULL, NULL);
        if (e != 1)
                return e;
        id = watcher_id(root);
        pthread_mutex_lock(&watchers_lock);
        for (struct watch **pp = &watchers; *pp; pp = &(*pp)->next)
                if (strcmp((*pp)->id, id) == 0) {
                        w = *pp;
                        if (remove) {
                                *pp = w->next;
                                n_watchers--;
                        }
                        break;
                }
        if (w && !remove) {
                _cleanup_(agent_user_done) struct agent_user owner = {0};
                _cleanup_fs_creds_ int creds = watch_become(w, &owner) >= 0;
                if (creds)
                        (void)watch_drain(w, queue_event, w);
                out = cJSON_CreateObject();
                if (out && cJSON_GetArraySize(w->queue) > 0) {
                        cJSON_AddItemToObject(out, "events", w->queue);
                        w->queue = cJSON_CreateArray();
                }
        }
        pthread_mutex_unlock(&watchers_lock);
        if (!w)
                return agent_respond_connect_error(r, "not_found", "watcher with id %s not found",
                                                   id);
        if (remove) {
                watch_free(w);
                return agent_respond(r, 200, "application/json", "{}", 2);
        }
        if (!out || !(json = cJSON_PrintUnformatted(out)))
                return agent_respond_connect_error(r, "internal", "out of memory");
        return agent_respond(r, 200, "application/json", json, strlen(json));
}

int agent_watch_handle_get_events(struct agent_request *r)
{
        return watcher_rpc(r, false);
}

int agent_watch_handle_remove(struct agent_request *r)
{
        return watcher_rpc(r, true);
}
