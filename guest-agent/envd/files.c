/* SPDX-License-Identifier: Apache-2.0 */
#include "envd/files.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/fs-check.h"
#include "envd/files-meta.h"
#include "envd/dirs.h"
#include "envd/gunzip.h"
#include "core/http.h"
#include "envd/multipart.h"
#include "core/path.h"
#include "fd-util.h"
#include "format-util.h"
#include "macros.h"
#include "missing-syscalls.h"
#include "json-util.h"

#define MAX_UPLOAD_FILES 1024u
#define SNIFF_LEN        512u
#define UPLOAD_WBUF      (256u * 1024u)

/* ---- shared ---- */

int agent_files_errno_status(int err)
{
        switch (err < 0 ? -err : err) {
        case ENOSPC:
        case EDQUOT:
                return 507;
        case EACCES:
        case EPERM:
        case EROFS:
                return 403;
        case ENOENT:
                return 404;
        case ENOTDIR:
        case EISDIR:
        case ENAMETOOLONG:
        case ELOOP:
        case EXDEV:
        case EINVAL:
                return 400;
        case EFBIG:
                return 413;
        default:
                return 500;
        }
}

const char *agent_files_mime_type(const char *name)
{
        static const struct {
                const char *ext, *type;
        } map[] = {
            /* Go's built-in table (mime.TypeByExtension), which envd uses, plus a few
             * common /etc/mime.types entries. */
            {"avif", "image/avif"},
            {"css", "text/css; charset=utf-8"},
            {"gif", "image/gif"},
            {"htm", "text/html; charset=utf-8"},
            {"html", "text/html; charset=utf-8"},
            {"jpeg", "image/jpeg"},
            {"jpg", "image/jpeg"},
            {"js", "text/javascript; charset=utf-8"},
            {"json", "application/json"},
            {"mjs", "text/javascript; charset=utf-8"},
            {"pdf", "application/pdf"},
            {"png", "image/png"},
            {"svg", "image/svg+xml"},
            {"wasm", "application/wasm"},
            {"webp", "image/webp"},
            {"xml", "text/xml; charset=utf-8"},
            {"txt", "text/plain; charset=utf-8"},
            {"csv", "text/csv; charset=utf-8"},
            {"md", "text/markdown; charset=utf-8"},
            {"py", "text/x-python; charset=utf-8"},
            {"sh", "text/x-sh; charset=utf-8"},
            {"zip", "application/zip"},
            {"gz", "application/gzip"},
            {"tar", "application/x-tar"},
            {"mp3", "audio/mpeg"},
            {"mp4", "video/mp4"},
            {"ico", "image/vnd.microsoft.icon"},
        };
        const char *dot = strrchr(name, '.');

        if (!dot || strchr(dot, '/'))
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (strcasecmp(dot + 1, map[i].ext) == 0)
                        return map[i].type;
        return NULL;
}

/* Like Go's DetectContentType fallback: text unless a byte looks binary. */
static const char *sniff_type(const uint8_t *buf, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                uint8_t c = buf[i];
                if (c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1A) || (c >= 0x1C && c <= 0x1F))
                        return "application/octet-stream";
        }
        return "text/plain; charset=utf-8";
}

/* Pick the user (query `username`, Basic auth, default) and resolve path for them. Returns 1 on
 * success, else the result of sending the error response (its status, or -errno). */
static int select_user(struct agent_request *r, struct agent_user *u, const char *path,
                       char **ret_resolved)
{
        _cleanup_free_ char *username = NULL, *q_user = NULL, *workdir = NULL;
        int e;

        e = http_query_get(r->head.query, "username", &q_user);
        if (e < 0)
                return agent_respond_rest_error(r, 400, "invalid query string");
        e = agent_request_user(r, q_user, u, &username);
        if (e == -ENOENT || e == -EINVAL)
                return agent_respond_rest_error(r, 401, "error looking up user '%s': unknown user",
                                                username ? username : "");
        if (e < 0)
                return agent_respond_rest_error(r, 500, "error looking up user: %s", strerror(-e));
        if (!ret_resolved)
                return 1;
        if ((e = agent_config_default_workdir(&workdir)) < 0 ||
            (e = agent_path_resolve(path, u->home, workdir, ret_resolved)) < 0)
                return agent_respond_rest_error(r, 400, "error resolving path '%s'",
                                                path ? path : "");
        if (strlen(*ret_resolved) >= PATH_MAX)
                return agent_respond_rest_error(r, 400, "path is too long (%zu bytes)",
                                                strlen(*ret_resolved));
        return 1;
}

/* ---- GET /files ---- */

static int content_disposition(const char *name, char **ret)
{
        bool plain = true;
        for (const char *p = name; *p; p++)
                if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                        plain = false;
        if (plain) {
                _cleanup_free_ char *q = malloc(strlen(name) * 2 + 1);
                size_t o = 0;
                if (!q)
                        return -ENOMEM;
                for (const char *p = name; *p; p++) {
                        if (*p == '"' || *p == '\\')
                                q[o++] = '\\';
                        q[o++] = *p;
                }
                q[o] = 0;
                return asprintf(ret, "inline; filename=\"%s\"", q) < 0 ? -ENOMEM : 0;
        }
        /* RFC 6266 / 5987 for non-ASCII names, as Go's mime.FormatMediaType does. */
        _cleanup_free_ char *pct = malloc(strlen(name) * 3 + 1);
        size_t o = 0;
        if (!pct)
                return -ENOMEM;
        for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
                if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || strchr("!#$&+-.^_`|~", *p))
                        pct[o++] = (char)*p;
                else
                        o += (size_t)sprintf(pct + o, "%%%02X", *p);
        }
        pct[o] = 0;
        return asprintf(ret, "inline; filename*=utf-8''%s", pct) < 0 ? -ENOMEM : 0;
}

static int open_for_read(const char *path, int *ret_fd)
{
        struct open_how how = {
            /* O_NONBLOCK: opening a FIFO must not block; only regular files are served. */
            .flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
            .resolve = RESOLVE_NO_MAGICLINKS,
        };
        int fd = openat2(AT_FDCWD, path, &how, sizeof(how));
        if (fd < 0)
                return negative_errno();
        *ret_fd = fd;
        return 0;
}

/* Serve exactly size bytes of fd: the request body is consumed, so the frame buffer is free to
 * carry file data. A file that shrinks underneath ends the body early (sbxd sees the short
 * Content-Length and fails the exchange); growth is not sent. */
static int send_file_body(struct agent_request *r, int fd, off_t size)
{
        off_t left = size;
        int e;

        while (left > 0) {
                size_t want = (size_t)MIN((off_t)SBX_FRAME_MAX_PAYLOAD, left);
                ssize_t n = read(fd, r->frame_buf, want);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? negative_errno() : -EPROTO;
                e = sbx_frame_write(r->fd, SBX_FRAME_DATA, r->frame_buf, (size_t)n);
                if (e < 0)
                        return e;
                left -= n;
        }
        return agent_respond_end(r);
}

int agent_files_handle_get(struct agent_request *r)
{
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_fs_creds_ int creds = 0;
        _cleanup_free_ char *qpath = NULL, *path = NULL, *disp = NULL;
        _cleanup_close_ int fd = -EBADF;
        char lenbuf[32];
        uint8_t sniff[SNIFF_LEN];
        const char *type;
        struct stat st;
        ssize_t sn;
        int e, gz;

        e = agent_request_discard_body(r, 64 * 1024);
        if (e < 0)
                return e;
        if (http_query_get(r->head.query, "path", &qpath) < 0)
                return agent_respond_rest_error(r, 400, "invalid query string");
        e = select_user(r, &u, qpath, &path);
        if (e != 1)
                return e;
        gz = agent_accept_encoding(agent_request_header(r, "Accept-Encoding"));
        if (gz < 0)
                return agent_respond_rest_error(r, 406,
                                                "no acceptable encoding found, supported: [gzip]");

        /* The user's rights to the end: some /proc files check the reader's at read time. */
        e = agent_fs_become(&u);
        if (e < 0)
                return agent_respond_rest_error(r, 500, "cannot switch to user '%s'", u.name);
        creds = 1;
        e = open_for_read(path, &fd);
        if (e >= 0)
                e = agent_fs_check_fd(fd);
        if (e == -ENOENT || e == -ENOTDIR)
                return agent_respond_rest_error(r, 404, "path '%s' does not exist", path);
        if (e < 0)
                return agent_respond_rest_error(r, agent_files_errno_status(e),
                                                "error opening file '%s': %s", path, strerror(-e));
        if (fstat(fd, &st) < 0)
                return agent_respond_rest_error(r, 500, "error checking file '%s': %m", path);
        if (S_ISDIR(st.st_mode))
                return agent_respond_rest_error(r, 400, "path '%s' is a directory", path);
        if (!S_ISREG(st.st_mode))
                return agent_respond_rest_error(r, 400, "path '%s' is not a regular file", path);
        if (fcntl(fd, F_SETFL, 0) < 0)
                return agent_respond_rest_error(r, 500, "error reading file '%s': %m", path);

        type = agent_files_mime_type(agent_path_basename(path));
        if (!type) {
                sn = pread(fd, sniff, sizeof(sniff), 0);
                type = sniff_type(sniff, sn > 0 ? (size_t)sn : 0);
        }
        if (content_disposition(agent_path_basename(path), &disp) < 0)
                return -ENOMEM;
        snprintf(lenbuf, sizeof(lenbuf), "%lld", (long long)st.st_size);
        if (gz) {
                const char *gz_headers[] = {
                    "Content-Type", type,   "Content-Disposition", disp, "Content-Encoding",
                    "gzip",         "Vary", "Accept-Encoding",     NULL};
                e = agent_respond_head(r, 200, gz_headers);
                return e < 0 ? e : agent_files_send_gzip(r, fd);
        }
        const char *headers[] = {
            "Content-Type", type, "Content-Disposition", disp, "Content-Length", lenbuf, NULL};
        e = agent_respond_head(r, 200, headers);
        if (e < 0)
                return e;

        return send_file_body(r, fd, st.st_size);
}

/* ---- POST /files ---- */

struct upload_entry {
        char *path;
};

struct upload {
        struct agent_request *r;
        const struct agent_user *user;
        const char *query_path; /* resolved `path` query parameter, or NULL */
        const struct agent_metadata *meta;
        char *home;
        char *workdir;
        /* the file being written */
        bool active;
        bool skipping; /* a part that is not named "file" */
        char *path;
        int dirfd;
        int fd;
        bool created;  /* the upload created the file (else it truncated an existing one) */
        uint8_t *wbuf; /* UPLOAD_WBUF bytes */
        size_t wlen;
        /* done */
        size_t n_done;
        char *done[MAX_UPLOAD_FILES];
        /* first error: HTTP status and message */
        int status;
        char *message;
};

static int upload_fail(struct upload *up, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int upload_fail(struct upload *up, int status, const char *fmt, ...)
{
        if (up->status)
                return -ECANCELED;
        up->status = status;
        up->message = FORMAT_VARARGS_DUP(fmt);
        return -ECANCELED;
}

/* A failed upload leaves no half-written file behind: a file it created is removed (if the
 * name still refers to it), a file it was overwriting is truncated to empty (its old content is
 * gone already, and an empty file is plainly incomplete; the space is given back). */
static void upload_abort_file(struct upload *up)
{
        struct stat a, b;

        if (!up->active)
                return;
        up->wlen = 0;
        if (up->created) {
                if (fstat(up->fd, &a) == 0 &&
                    fstatat(up->dirfd, agent_path_basename(up->path), &b, AT_SYMLINK_NOFOLLOW) ==
                        0 &&
                    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
                        (void)unlinkat(up->dirfd, agent_path_basename(up->path), 0);
        } else
                (void)!ftruncate(up->fd, 0);
        up->fd = safe_close(up->fd);
        up->dirfd = safe_close(up->dirfd);
        free(up->path);
        up->path = NULL;
        up->active = false;
}

static void upload_done(struct upload *up)
{
        upload_abort_file(up);
        for (size_t i = 0; i < up->n_done; i++)
                free(up->done[i]);
        free(up->message);
        free(up->wbuf);
        free(up->home);
        free(up->workdir);
}

/* Open the target for writing in place, as envd does (O_CREAT|O_TRUNC): a watcher of the
 * directory sees the file itself created and written, a symlink is written through (magic
 * links are refused), hard links and the inode are kept. Only regular files are written.
 * The file is given to the user as envd gives it (envd, root, chowns what it writes), which
 * watchers see: a new file is CREATE, CHMOD, then WRITE; an existing one CHMOD (the chown
 * before its truncation), then WRITE. A file the user may write but does not own keeps its
 * owner (the chown is refused, as envd's would not be: it runs as root). */
static int open_target(struct upload *up, const char *base)
{
        struct open_how how = {.resolve = RESOLVE_NO_MAGICLINKS};
        const uint64_t flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
        struct stat st;

        up->fd = -EBADF;
        for (unsigned tries = 0; tries < 8 && up->fd < 0; tries++) {
                how.flags = flags | O_CREAT | O_EXCL, how.mode = 0644;
                up->fd = openat2(up->dirfd, base, &how, sizeof(how));
                if (up->fd >= 0) {
                        up->created = true;
                        break;
                }
                if (errno != EEXIST)
                        return negative_errno();
                /* It exists, or is a symlink: look at what it is before opening it. */
                if (fstatat(up->dirfd, base, &st, 0) < 0) {
                        if (errno != ENOENT)
                                return negative_errno();
                        if (fstatat(up->dirfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue; /* removed meanwhile */
                        /* A dangling symlink: create its target, as envd's O_CREAT does. */
                        how.flags = flags | O_CREAT, how.mode = 0644;
                } else if (S_ISDIR(st.st_mode))
                        return -EISDIR;
                else if (!S_ISREG(st.st_mode))
                        return -EINVAL;
                else
                        how.flags = flags, how.mode = 0; /* truncated below, after the chown */
                up->fd = openat2(up->dirfd, base, &how, sizeof(how));
                if (up->fd < 0 && errno != ENOENT)
                        return negative_errno();
                up->created = false;
        }
        if (up->fd < 0)
                return -EAGAIN;
        if (fstat(up->fd, &st) < 0 || !S_ISREG(st.st_mode) || fcntl(up->fd, F_SETFL, 0) < 0) {
                up->fd = safe_close(up->fd);
                return -EINVAL;
        }
        (void)!fchown(up->fd, up->user->uid, up->user->gid);
        if (!up->created && ftruncate(up->fd, 0) < 0) {
                int e = negative_errno();
                up->fd = safe_close(up->fd);
                return e;
        }
        /* Not the agent's own /proc files (nothing there is created: none to remove). */
        int e = agent_fs_check_fd(up->fd);
        if (e < 0) {
                up->fd = safe_close(up->fd);
                return e;
        }
        return 0;
}

static int upload_begin(struct upload *up, const char *raw_path)
{
        _cleanup_free_ char *path = NULL;
        int e;

        if (up->query_path)
                path = strdup(up->query_path);
        else if (!raw_path || !*raw_path)
                return upload_fail(up, 400, "part has no filename to use as its path");
        else if (agent_path_resolve(raw_path, up->home, up->workdir, &path) < 0)
                return upload_fail(up, 400, "error resolving path '%s'", raw_path);
        if (!path)
                return upload_fail(up, 500, "out of memory");
        if (strlen(path) >= PATH_MAX)
                return upload_fail(up, 400, "path is too long (%zu bytes)", strlen(path));
        if (strcmp(path, "/") == 0)
                return upload_fail(up, 400, "path '/' is a directory");
        for (size_t i = 0; i < up->n_done; i++)
                if (strcmp(up->done[i], path) == 0)
                        return upload_fail(up, 400,
                                           "you cannot upload multiple files to the same path "
                                           "'%s' in one upload request",
                                           path);
        if (up->n_done >= MAX_UPLOAD_FILES)
                return upload_fail(up, 400, "too many files in one upload");

        /* The parents, as envd's EnsureDirs, within the sandbox's rights (envd/dirs.h). */
        _cleanup_free_ char *parent = strdup(path);
        if (!parent)
                return upload_fail(up, 500, "out of memory");
        *strrchr(parent, '/') = '\0';
        e = agent_fs_ensure_dirs(up->user, *parent ? parent : "/", &up->dirfd);
        if (e < 0)
                return upload_fail(up, agent_files_errno_status(e),
                                   "error ensuring directories for '%s': %s", path, strerror(-e));
        const char *base = agent_path_basename(path);
        e = open_target(up, base);
        if (e < 0) {
                up->dirfd = safe_close(up->dirfd);
                if (e == -EISDIR)
                        return upload_fail(up, 400, "path is a directory: %s", path);
                if (e == -EINVAL)
                        return upload_fail(up, 400, "path is not a regular file: %s", path);
                return upload_fail(up, agent_files_errno_status(e),
                                   e == -ENOSPC || e == -EDQUOT ? "not enough inodes available: %s"
                                                                : "error opening file '%s': %s",
                                   path, strerror(-e));
        }
        up->path = TAKE_PTR(path);
        up->active = true;
        return 0;
}

/* Write what is buffered (multipart hands over small pieces: one per '\r' in binary data). */
static int upload_flush(struct upload *up)
{
        int e = 0;
        if (up->wlen > 0)
                e = write_full(up->fd, up->wbuf, up->wlen);
        up->wlen = 0;
        return e;
}

static int upload_data(struct upload *up, const uint8_t *buf, size_t len)
{
        int e = 0;
        if (!up->active)
                return 0;
        if (up->wlen + len > UPLOAD_WBUF) {
                e = upload_flush(up);
                if (e >= 0 && len >= UPLOAD_WBUF)
                        e = write_full(up->fd, buf, len);
                else if (e >= 0) {
                        memcpy(up->wbuf + up->wlen, buf, len);
                        up->wlen += len;
                }
        } else {
                memcpy(up->wbuf + up->wlen, buf, len);
                up->wlen += len;
        }
        if (e < 0) {
                int status = agent_files_errno_status(e);
                int r = upload_fail(up, status,
                                    status == 507 ? "not enough disk space available: %s"
                                                  : "error writing file '%s': %s",
                                    up->path, strerror(-e));
                upload_abort_file(up);
                return r;
        }
        return 0;
}

/* The body is complete: flush, then the metadata (as envd, after the data: the request's
 * X-Metadata-* replace every user.e2b.* the file had). */
static int upload_commit(struct upload *up)
{
        int e;
        if (!up->active)
                return 0;
        if ((e = upload_flush(up)) < 0) {
                int status = agent_files_errno_status(e);
                upload_abort_file(up);
                return upload_fail(up, status,
                                   status == 507 ? "not enough disk space available: %s"
                                                 : "error writing file: %s",
                                   strerror(-e));
        }
        if ((e = agent_metadata_replace(up->meta, up->fd)) < 0) {
                int status = agent_files_errno_status(e);
                upload_abort_file(up);
                return upload_fail(up, status,
                                   status == 507 ? "not enough space for file metadata: %s"
                                                 : "error writing file metadata: %s",
                                   strerror(-e));
        }
        if (close(up->fd) < 0) {
                up->fd = -EBADF;
                e = negative_errno();
                up->active = false; /* the fd is gone: nothing to undo through it */
                up->dirfd = safe_close(up->dirfd);
                free(up->path);
                up->path = NULL;
                return upload_fail(up, agent_files_errno_status(e), "error writing file: %s",
                                   strerror(-e));
        }
        up->fd = -EBADF;
        up->dirfd = safe_close(up->dirfd);
        up->done[up->n_done++] = TAKE_PTR(up->path);
        up->active = false;
        return 0;
}

static int mp_begin(void *userdata, const char *name, const char *filename)
{
        struct upload *up = userdata;
        up->skipping = !name || strcmp(name, "file") != 0;
        if (up->skipping)
                return 0;
        return upload_begin(up, filename);
}

static int mp_data(void *userdata, const uint8_t *buf, size_t len)
{
        return upload_data(userdata, buf, len);
}

static int mp_end(void *userdata)
{
        return upload_commit(userdata);
}

static const struct multipart_callbacks mp_callbacks = {
    .part_begin = mp_begin,
    .part_data = mp_data,
    .part_end = mp_end,
};

static int upload_respond(struct upload *up)
{
        _cleanup_json_ cJSON *arr = cJSON_CreateArray();
        _cleanup_free_ char *json = NULL;

        if (!arr)
                return -ENOMEM;
        for (size_t i = 0; i < up->n_done; i++) {
                cJSON *o = cJSON_CreateObject();
                if (!o || !cJSON_AddItemToArray(arr, o) ||
                    !cJSON_AddStringToObject(o, "path", up->done[i]) ||
                    !cJSON_AddStringToObject(o, "name", agent_path_basename(up->done[i])) ||
                    !cJSON_AddStringToObject(o, "type", "file") ||
                    agent_metadata_to_json(up->meta, o) < 0)
                        return -ENOMEM;
        }
        json = cJSON_PrintUnformatted(arr);
        if (!json)
                return -ENOMEM;
        return agent_respond(up->r, 200, "application/json", json, strlen(json));
}

struct body_sink {
        struct upload *up;
        struct multipart_parser *mp; /* NULL for a raw body */
};

static int body_sink(void *userdata, const uint8_t *buf, size_t len)
{
        struct body_sink *s = userdata;
        return s->mp ? multipart_parser_feed(s->mp, buf, len) : upload_data(s->up, buf, len);
}

static int upload_stream(struct upload *up, const char *boundary, bool gzip)
{
        _cleanup_(multipart_parser_freep) struct multipart_parser *mp = NULL;
        _cleanup_(agent_gunzip_freep) struct agent_gunzip *gz = NULL;
        struct body_sink sink = {.up = up};
        const uint8_t *chunk;
        size_t n;
        int e;

        if (gzip && agent_gunzip_new(&gz) < 0)
                return upload_fail(up, 500, "out of memory");
        if (boundary) {
                e = multipart_parser_new(boundary, &mp_callbacks, up, &mp);
                if (e < 0)
                        return upload_fail(up, 400, "invalid multipart boundary");
                sink.mp = mp;
        } else {
                e = upload_begin(up, NULL);
                if (e < 0)
                        return e;
        }
        while ((e = agent_request_read_body(up->r, &chunk, &n)) > 0) {
                e = gz ? agent_gunzip_feed(gz, chunk, n, body_sink, &sink)
                       : body_sink(&sink, chunk, n);
                if (e == -EBADMSG)
                        return upload_fail(up, 400,
                                           mp ? "error reading form: malformed multipart body"
                                              : "error decompressing request body");
                if (e < 0)
                        return e;
        }
        if (e < 0)
                return e; /* connection broken: nothing to answer */
        if (gz && agent_gunzip_finish(gz) < 0)
                return upload_fail(up, 400, "error decompressing request body: unexpected EOF");
        if (mp) {
                e = multipart_parser_finish(mp);
                if (e < 0)
                        return upload_fail(up, 400, "error reading form: unexpected end of body");
                return 0;
        }
        return upload_commit(up);
}

int agent_files_handle_post(struct agent_request *r)
{
        _cleanup_(agent_user_done) struct agent_user u = {0};
        _cleanup_free_ char *qpath = NULL, *path = NULL, *media = NULL, *boundary = NULL;
        _cleanup_fs_creds_ int creds = 0;
        const char *ct = agent_request_header(r, "Content-Type");
        const char *enc = agent_request_header(r, "Content-Encoding");
        struct upload up = {.r = r, .dirfd = -EBADF, .fd = -EBADF};
        _cleanup_(agent_metadata_done) struct agent_metadata meta = {0};
        const char *why = NULL;
        int e;

        e = http_query_get(r->head.query, "path", &qpath);
        if (e < 0)
                return agent_respond_rest_error(r, 400, "invalid query string");
        e = select_user(r, &u, qpath, qpath ? &path : NULL);
        if (e != 1)
                return e;
        if (enc && *enc && strcasecmp(enc, "identity") != 0 && strcasecmp(enc, "gzip") != 0)
                return agent_respond_rest_error(
                    r, 400, "error decompressing request body: unsupported Content-Encoding '%s'",
                    enc);
        if (http_media_type(ct, &media) < 0)
                return -ENOMEM;
        if (strcmp(media, "application/octet-stream") == 0) {
                if (!path)
                        return agent_respond_rest_error(
                            r, 400, "path query parameter is required for raw body upload");
        } else if (strncmp(media, "multipart/", 10) == 0) {
                if (http_header_param(ct, "boundary", &boundary) <= 0)
                        return agent_respond_rest_error(r, 400,
                                                        "multipart body without a boundary");
        } else
                return agent_respond_rest_error(r, 400,
                                                "unsupported content type: %s, expected "
                                                "multipart/form-data or application/octet-stream",
                                                ct ? ct : "");

        e = agent_metadata_parse(r, &meta, &why);
        if (e == -EINVAL)
                return agent_respond_rest_error(r, 400, "invalid metadata: %s", why);
        if (e < 0)
                return e;
        up.user = &u;
        up.query_path = path;
        up.meta = &meta;
        up.home = strdup(u.home);
        up.wbuf = malloc(UPLOAD_WBUF);
        if (!up.home || !up.wbuf || agent_config_default_workdir(&up.workdir) < 0) {
                upload_done(&up);
                return -ENOMEM;
        }
        /* The whole upload runs with the user's fs credentials; socket I/O is unaffected. */
        e = agent_fs_become(&u);
        if (e < 0) {
                upload_done(&up);
                return agent_respond_rest_error(r, 500, "cannot switch to user '%s'", u.name);
        }
        creds = 1;

        e = upload_stream(&up, boundary, enc && strcasecmp(enc, "gzip") == 0);
        if (up.status) {
                upload_abort_file(&up);
                e = agent_respond_rest_error(r, up.status, "%s",
                                             up.message ? up.message : "upload failed");
        } else if (e >= 0)
                e = upload_respond(&up);
        upload_done(&up);
        return e;
}
