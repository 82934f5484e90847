/* SPDX-License-Identifier: Apache-2.0 */
#include "e2b/routes-templates.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template-build/build.h"
#include "http/upload.h"
#include "json-util.h"
#include "log.h"

/* An error of the build service in E2B's shape (-EDQUOT: 429). */
static int reply_err(struct request *req, int r, const char *err)
{
        if (r == -EDQUOT)
                return http_reply_error(req, -EAGAIN, NULL, "%s", err);
        return http_reply_error(req, r, NULL, "%s", err[0] ? err : strerror(-r));
}

static int reply(struct request *req, int r, unsigned status, cJSON *o, const char *err)
{
        _cleanup_json_ cJSON *j = o;
        if (r < 0)
                return reply_err(req, r, err);
        return http_reply_cjson(req, status, j, NULL, NULL);
}

int e2b_build_request(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        cJSON *o = NULL;
        if (!req->body->json)
                return http_reply_error(req, -EINVAL, NULL, "a JSON body is required");
        int r = build_request(req->srv->build, req->body->json, &o, err);
        return reply(req, r, 202, o, err);
}

int e2b_build_file_link(struct request *req)
{
        char err[BUILD_ERR_MAX] = "", base[512];
        const char *hash = req->args.tail ? req->args.tail + 1 : "";
        cJSON *o = NULL;
        int r = http_public_base(req, base, sizeof(base));
        if (r >= 0)
                r = build_file_link(req->srv->build, req->args.v[0], hash, base, &o, err);
        return reply(req, r, 201, o, err);
}

int e2b_build_upload_begin(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        const char *hash = req->args.tail ? req->args.tail + 1 : "";
        const char *cl = http_header(req, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > BUILD_MAX_UPLOAD)
                return http_reply_error(req, -EFBIG, NULL, "a copy upload is at most %llu bytes",
                                        (unsigned long long)BUILD_MAX_UPLOAD);
        int fd = -1;
        int r = build_upload_open(req->srv->build, req->args.v[0], hash, http_arg(req, "expires"),
                                  http_arg(req, "token"), &fd, err);
        if (r < 0)
                return reply_err(req, r, err);
        return http_upload_begin(req, fd, BUILD_MAX_UPLOAD);
}

int e2b_build_upload_finish(struct request *req)
{
        struct http_upload *u = req->state;
        char err[BUILD_ERR_MAX] = "";
        if (u->too_large)
                return http_reply_error(req, -EFBIG, NULL, "a copy upload is at most %llu bytes",
                                        (unsigned long long)BUILD_MAX_UPLOAD);
        if (u->error)
                return http_reply_error(req, u->error, NULL, "storing the upload failed: %s",
                                        strerror(-u->error));
        int r =
            build_upload_commit(req->srv->build, req->args.v[0], req->args.tail + 1, u->fd, err);
        if (r < 0)
                return reply_err(req, r, err);
        log_info("req=%s template %s: upload %.12s… stored (%llu bytes)", req->rid, req->args.v[0],
                 req->args.tail + 1, (unsigned long long)u->len);
        return http_reply_json(req, 200, "{}");
}

int e2b_build_start(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        if (!req->body->json)
                return http_reply_error(req, -EINVAL, NULL, "a JSON body is required");
        int r = build_start(req->srv->build, req->args.v[0], req->args.v[1], req->body->json, err);
        if (r < 0)
                return reply_err(req, r, err);
        return http_reply_json(req, 202, "{}");
}

int e2b_build_status(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        const char *off = http_arg(req, "logsOffset");
        char *end = NULL;
        long long offset = off ? strtoll(off, &end, 10) : 0;
        if (off && (*end || offset < 0 || offset > 100000000))
                return http_reply_error(req, -EINVAL, NULL, "logsOffset must be an integer >= 0");
        cJSON *o = NULL;
        int r =
            build_status(req->srv->build, req->args.v[0], req->args.v[1], (size_t)offset, &o, err);
        return reply(req, r, 200, o, err);
}

int e2b_template_alias(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        cJSON *o = NULL;
        int r = build_alias(req->srv->build, req->args.v[0], &o, err);
        return reply(req, r, 200, o, err);
}

int e2b_template_tags_assign(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        cJSON *o = NULL;
        if (!req->body->json)
                return http_reply_error(req, -EINVAL, NULL, "a JSON body is required");
        int r = build_tags_assign(req->srv->build, req->body->json, &o, err);
        return reply(req, r, 201, o, err);
}

int e2b_template_tags_remove(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        if (!req->body->json)
                return http_reply_error(req, -EINVAL, NULL, "a JSON body is required");
        int r = build_tags_remove(req->srv->build, req->body->json, err);
        return r < 0 ? reply_err(req, r, err) : http_reply_204(req);
}

int e2b_template_tags_list(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        cJSON *o = NULL;
        int r = build_tags_list(req->srv->build, req->args.v[0], &o, err);
        return reply(req, r, 200, o, err);
}

int e2b_template_list(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        cJSON *o = NULL;
        int r = build_list(req->srv->build, &o, err);
        return reply(req, r, 200, o, err);
}

int e2b_template_get(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        cJSON *o = NULL;
        int r = build_get(req->srv->build, req->args.v[0], &o, err);
        return reply(req, r, 200, o, err);
}

int e2b_build_delete(struct request *req)
{
        char err[BUILD_ERR_MAX] = "";
        int r = build_delete(req->srv->build, req->args.v[0], err);
        if (r == -ENOENT)
                return r;
        return r < 0 ? reply_err(req, r, err) : http_reply_204(req);
}
