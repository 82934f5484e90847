/* SPDX-License-Identifier: Apache-2.0 */
#include "native/v1-images.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "http/upload.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"
#include "storage/image-import.h"
#include "time-util.h"

int v1_images_import_begin(struct request *req)
{
        const char *name = http_arg(req, "name"), *tag = http_arg(req, "tag");
        char id[IMAGE_ID_MAX];
        if (!name || image_template_id(name, tag && *tag ? tag : NULL, id) < 0)
                return v1_reply_error(req, 400, "bad_request",
                                      "name (and tag) must be [a-z0-9][a-z0-9._-]* (at most %d "
                                      "bytes) and [A-Za-z0-9_][A-Za-z0-9._-]* (at most %d)",
                                      IMAGE_NAME_MAX, IMAGE_TAG_MAX);
        const char *cl = http_header(req, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > IMAGE_MAX_ARCHIVE)
                return v1_reply_error(req, 413, NULL, "an image archive is at most %llu bytes",
                                      (unsigned long long)IMAGE_MAX_ARCHIVE);
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/layers", req->srv->config->state_dir);
        (void)mkdir(dir, 0700);
        /* Unnamed, so nothing is left behind whatever happens; on the state dir's own file
         * system, which is where the layers go too. */
        int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0)
                return v1_reply_error(req, 500, NULL, "cannot store the upload: %s",
                                      strerror(errno));
        return http_upload_begin(req, fd, IMAGE_MAX_ARCHIVE);
}

int v1_images_import_finish(struct request *req)
{
        struct http_upload *u = req->state;
        const char *name = http_arg(req, "name"), *tag = http_arg(req, "tag");
        const char *ref = http_arg(req, "ref");
        char err[IMAGE_ERR_MAX];
        if (u->too_large)
                return v1_reply_error(req, 413, NULL, "an image archive is at most %llu bytes",
                                      (unsigned long long)IMAGE_MAX_ARCHIVE);
        if (u->error)
                return v1_reply_error(req, u->error == -ENOSPC ? 507 : 500, NULL,
                                      "storing the upload failed: %s", strerror(-u->error));
        if (u->len == 0)
                return v1_reply_error(req, 400, "bad_request",
                                      "the body must be an OCI image layout or docker save "
                                      "archive");
        int64_t t0 = now_ms();
        _cleanup_json_ cJSON *img = NULL;
        const struct sbxd_config *cfg = req->srv->config;
        struct image_limits lim = image_limits_of(cfg);
        int r = image_import(cfg->state_dir, u->fd, name, tag && *tag ? tag : NULL,
                             ref && *ref ? ref : NULL, &lim, &img, err);
        if (r == -EINVAL)
                return v1_reply_error(req, 400, "bad_image", "%s", err);
        if (r == -EEXIST)
                return v1_reply_error(req, 409, "conflict", "%s", err);
        if (r == -EFBIG)
                return v1_reply_error(req, 413, "too_large", "%s", err);
        if (r == -ENOSPC || r == -EDQUOT)
                return v1_reply_error(req, 507, NULL, "%s",
                                      err[0] ? err : "no space left for the image's layers");
        if (r < 0)
                return v1_reply_error(req, 500, NULL, "importing failed: %s", strerror(-r));
        log_info("req=%s image %s imported: %llu bytes in %lld ms", req->rid,
                 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(img, "template")),
                 (unsigned long long)u->len, (long long)(now_ms() - t0));
        return v1_reply_json(req, 201, img, NULL, NULL);
}

int v1_images_list(struct request *req)
{
        _cleanup_json_ cJSON *list = NULL;
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o || image_list(req->srv->config->state_dir, &list) < 0)
                return -ENOMEM;
        cJSON_AddItemToObject(o, "images", TAKE_PTR(list));
        return v1_reply_json(req, 200, o, NULL, NULL);
}

int v1_images_get(struct request *req)
{
        _cleanup_json_ cJSON *img = NULL;
        const char *id = req->args.v[0];
        if (image_get(req->srv->config->state_dir, id, &img) < 0)
                return v1_reply_error(req, 404, "not_found", "image %s not found", id);
        return v1_reply_json(req, 200, img, NULL, NULL);
}

int v1_images_delete(struct request *req)
{
        const char *id = req->args.v[0];
        int r = image_remove(req->srv->config->state_dir, id);
        if (r == -ENOENT)
                return v1_reply_error(req, 404, "not_found", "image %s not found", id);
        if (r == -EPERM)
                return v1_reply_error(req, 409, "conflict",
                                      "template %s is not an image: it is not removed here", id);
        if (r < 0)
                return v1_reply_error(req, 500, NULL, "removing failed: %s", strerror(-r));
        return http_reply_204(req);
}
