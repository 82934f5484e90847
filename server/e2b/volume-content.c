/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/volume-content.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/keys.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "path-util.h"
#include "storage/volume-fs.h"
#include "storage/volume.h"

/* One request's hold on its volume: released (unmounted when last) with the request. */
struct vc {
        struct volume_store *store;
        char id[VOLUME_ID_LEN + 1];
        char path[PATH_MAX];
        int root;                     /* O_PATH fd of the volume's root */
        int fd;                       /* PUT: the file being written */
        struct volume_fs_attrs attrs; /* PUT: owner and mode asked for */
        int error;                    /* PUT: the first write error */
        size_t dropped;               /* PUT: body bytes dropped after it */
};

static void vc_free(void *p)
{
        struct vc *c = p;
        if (!c)
                return;
        safe_close(c->fd);
        safe_close(c->root);
        volume_release(c->store, c->id, true);
        free(c);
}

/* The volume's token, or an API key. */
static bool authorized(struct request *req, const struct volume_info *v)
{
        const char *authz = http_header(req, MHD_HTTP_HEADER_AUTHORIZATION);
        const char *key = http_header(req, "X-API-KEY");
        if (authz && strncmp(authz, "Bearer ", 7) == 0) {
                const char *b = authz + 7;
                if (const_time_streq(b, v->token) || keys_check(&req->srv->keys, b))
                        return true;
        }
        return key && keys_check(&req->srv->keys, key);
}

static int reply_fs_error(struct request *req, int r, const char *path)
{
        switch (-r) {
        case ENOENT:
                return http_reply_error(req, r, NULL, "path '%s' not found", path);
        case EEXIST:
                return http_reply_error(req, r, NULL, "path '%s' already exists", path);
        case ENOTDIR:
                return http_reply_error(req, -EINVAL, NULL,
                                        "a component of the path is a file, but must be a "
                                        "directory");
        case EISDIR:
                return http_reply_error(req, -EINVAL, NULL, "path '%s' is a directory", path);
        case EINVAL:
        case ENXIO: /* a FIFO without a reader, a socket */
        case ENODEV:
                return http_reply_error(req, -EINVAL, NULL, "path '%s' is not a regular file",
                                        path);
        case ERANGE:
                return http_reply_error(req, r, NULL, "more than %d entries to list",
                                        VOLUME_FS_LIST_MAX);
        case EPERM:
                return http_reply_error(req, -EINVAL, NULL, "cannot delete root");
        case ELOOP:
        case ENAMETOOLONG:
                return http_reply_error(req, -EINVAL, NULL, "path '%s': %s", path, strerror(-r));
        case ENOSPC:
        case EDQUOT:
                return http_reply_error(req, -ENOSPC, NULL, "the volume is full");
        default:
                log_warning_errno(r, "volume content: '%s': %m", path);
                return http_reply_error(req, r, NULL, "'%s': %s", path, strerror(-r));
        }
}

/* A query number: absent leaves *has false; else an integer in 0..max. */
static int query_num(struct request *req, const char *name, uint32_t max, bool *has, uint32_t *ret)
{
        const char *v = http_arg(req, name);
        *has = false;
        if (!v)
                return 0;
        char *end;
        errno = 0;
        unsigned long n = strtoul(v, &end, 10);
        if (!*v || *end || errno || n > max || v[0] == '-')
                return -EINVAL;
        *has = true;
        *ret = (uint32_t)n;
        return 0;
}

static int query_attrs(struct request *req, struct volume_fs_attrs *a)
{
        *a = (struct volume_fs_attrs){0};
        if (query_num(req, "uid", VOLUME_FS_ID_MAX, &a->has_uid, &a->uid) < 0 ||
            query_num(req, "gid", VOLUME_FS_ID_MAX, &a->has_gid, &a->gid) < 0 ||
            query_num(req, "mode", 07777, &a->has_mode, &a->mode) < 0)
                return -EINVAL;
        return 0;
}

static bool query_force(struct request *req)
{
        const char *f = http_arg(req, "force");
        return f && strcmp(f, "true") == 0;
}

/* Auth, the volume held, its root open, the cleaned path: 0 with *ret, else the status of the
 * refusal answered. */
static int open_volume(struct request *req, struct vc **ret)
{
        const char *id = req->args.v[0];
        struct volume_info v;
        if (!volume_id_valid(id) || volume_get(req->srv->volumes, id, &v) < 0)
                return http_reply_error(req, -ENOENT, NULL, "Volume not found");
        if (!authorized(req, &v))
                return http_reply_error(req, -EACCES, NULL, "invalid or missing volume token");
        const char *path = http_arg(req, "path");
        if (!path)
                return http_reply_error(req, -EINVAL, NULL, "path is required");
        struct vc *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->store = req->srv->volumes;
        c->root = c->fd = -EBADF;
        snprintf(c->id, sizeof(c->id), "%s", v.id);
        if (path_clean(path, c->path, sizeof(c->path)) < 0) {
                free(c);
                return http_reply_error(req, -EINVAL, NULL, "path too long");
        }
        char mnt[4096];
        int r = volume_acquire(c->store, c->id, true, mnt, sizeof(mnt));
        if (r < 0) {
                free(c);
                return r == -ENOENT ? http_reply_error(req, r, NULL, "Volume not found")
                                    : http_reply_error(req, r, NULL, "mounting the volume: %s",
                                                       strerror(-r));
        }
        req->state = c; /* released with the request from here on */
        req->state_free = vc_free;
        r = volume_fs_open_root(mnt, &c->root);
        if (r < 0)
                return http_reply_error(req, r, NULL, "opening the volume: %s", strerror(-r));
        *ret = c;
        return 0;
}

static int reply_entry(struct request *req, int r, const char *path, cJSON *e)
{
        _cleanup_json_ cJSON *o = e;
        if (r < 0)
                return reply_fs_error(req, r, path);
        return http_reply_cjson(req, 200, o, NULL, NULL);
}

int e2b_volume_dir(struct request *req)
{
        struct vc *c = NULL;
        int st = open_volume(req, &c);
        if (st != 0)
                return st;
        cJSON *e = NULL;
        if (strcmp(req->method, "GET") == 0) {
                bool has;
                uint32_t depth = 1;
                if (query_num(req, "depth", UINT32_MAX, &has, &depth) < 0 ||
                    (has && (depth < 1 || depth > VOLUME_FS_DEPTH_MAX)))
                        return http_reply_error(req, -EINVAL, NULL,
                                                "depth must be between 1 and %d",
                                                VOLUME_FS_DEPTH_MAX);
                int r = volume_fs_list(c->root, c->path, has ? depth : 1, &e);
                return reply_entry(req, r, c->path, e);
        }
        struct volume_fs_attrs a;
        if (query_attrs(req, &a) < 0)
                return http_reply_error(req, -EINVAL, NULL,
                                        "uid and gid must be 0..65535, mode 0..07777");
        int r = volume_fs_mkdir(c->root, c->path, &a, query_force(req), &e);
        return reply_entry(req, r, c->path, e);
}

/* PATCH's body {uid?, gid?, mode?}. */
static int body_attrs(const cJSON *body, struct volume_fs_attrs *a)
{
        static const char *const names[] = {"uid", "gid", "mode"};
        bool *has[] = {&a->has_uid, &a->has_gid, &a->has_mode};
        uint32_t *val[] = {&a->uid, &a->gid, &a->mode};
        const double max[] = {VOLUME_FS_ID_MAX, VOLUME_FS_ID_MAX, 07777};
        *a = (struct volume_fs_attrs){0};
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                const cJSON *v = body ? cJSON_GetObjectItemCaseSensitive(body, names[i]) : NULL;
                if (!v || cJSON_IsNull(v))
                        continue;
                if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > max[i] ||
                    v->valuedouble != (double)(uint32_t)v->valuedouble)
                        return -EINVAL;
                *has[i] = true;
                *val[i] = (uint32_t)v->valuedouble;
        }
        return 0;
}

int e2b_volume_path(struct request *req)
{
        bool patch = strcmp(req->method, "PATCH") == 0;
        if (!patch && strcmp(req->method, "GET") != 0 && strcmp(req->method, "DELETE") != 0)
                return http_reply_error(req, -EINVAL, NULL, "method %s not allowed", req->method);
        struct vc *c = NULL;
        int st = open_volume(req, &c);
        if (st != 0)
                return st;
        cJSON *e = NULL;
        if (strcmp(req->method, "DELETE") == 0) {
                int r = volume_fs_remove(c->root, c->path);
                return r < 0 ? reply_fs_error(req, r, c->path) : http_reply_204(req);
        }
        int r;
        if (!patch) {
                r = volume_fs_stat(c->root, c->path, &e);
                return reply_entry(req, r, c->path, e);
        }
        struct volume_fs_attrs a;
        if (body_attrs(req->body->json, &a) < 0)
                return http_reply_error(req, -EINVAL, NULL,
                                        "uid and gid must be 0..65535, mode 0..07777");
        r = volume_fs_update(c->root, c->path, &a, &e);
        return reply_entry(req, r, c->path, e);
}

int e2b_volume_file_get(struct request *req)
{
        struct vc *c = NULL;
        int st = open_volume(req, &c);
        if (st != 0)
                return st;
        int fd;
        uint64_t size;
        int r = volume_fs_open_read(c->root, c->path, &fd, &size);
        if (r < 0)
                return reply_fs_error(req, r, c->path);
        /* libmicrohttpd owns fd from here (and closes it); the volume stays held until the
         * request completes */
        struct MHD_Response *resp = MHD_create_response_from_fd64(size, fd);
        if (!resp) {
                close(fd);
                return -ENOMEM;
        }
        MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
        r = http_queue(req, 200, resp);
        MHD_destroy_response(resp);
        return r;
}

int e2b_volume_file_put_begin(struct request *req)
{
        struct vc *c = NULL;
        int st = open_volume(req, &c);
        if (st != 0)
                return st;
        if (query_attrs(req, &c->attrs) < 0)
                return http_reply_error(req, -EINVAL, NULL,
                                        "uid and gid must be 0..65535, mode 0..07777");
        int r = volume_fs_open_write(c->root, c->path, &c->attrs, query_force(req), &c->fd);
        return r < 0 ? reply_fs_error(req, r, c->path) : 0;
}

int e2b_volume_file_put_upload(struct request *req, const char *data, size_t len)
{
        struct vc *c = req->state;
        if (c->error) { /* answered at the end; the rest of the body is dropped, bounded */
                c->dropped += len;
                return c->dropped > HTTP_MAX_DISCARD ? -EMSGSIZE : 0;
        }
        int r = write_full(c->fd, data, len);
        if (r < 0)
                c->error = r;
        return 0;
}

int e2b_volume_file_put_finish(struct request *req)
{
        struct vc *c = req->state;
        if (c->error)
                return reply_fs_error(req, c->error, c->path);
        cJSON *e = NULL;
        int r = volume_fs_finish_write(c->fd, c->path, &c->attrs, &e);
        return reply_entry(req, r, c->path, e);
}
