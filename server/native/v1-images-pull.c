/* SPDX-License-Identifier: Apache-2.0 */
#include "native/v1-images-pull.h"

#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "native/v1-images.h"
#include "native/v1.h"
#include "pull/pull-auth.h"
#include "pull/pull.h"
#include "thread-util.h"
#include "time-util.h"

#define STREAM_BLOCK (16 * 1024)

unsigned v1_image_pull_status(int r, const char **ret_code)
{
        static const struct {
                int r;
                unsigned status;
                const char *code;
        } map[] = {
            {-EINVAL, 400, "bad_request"},       {-ENOENT, 404, "not_found"},
            {-EACCES, 403, "registry_denied"},   {-EEXIST, 409, "conflict"},
            {-EBADMSG, 502, "bad_registry"},     {-EPROTO, 502, "bad_registry"},
            {-EHOSTUNREACH, 502, "unreachable"}, {-EBUSY, 503, "registry_busy"},
            {-EFBIG, 413, "too_large"},          {-ENOSPC, 507, "no_space"},
            {-EDQUOT, 507, "no_space"},          {-ECANCELED, 499, "cancelled"},
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (map[i].r == r) {
                        *ret_code = map[i].code;
                        return map[i].status;
                }
        *ret_code = "internal";
        return 500;
}

/* One pull, shared by its thread and, when streaming, the answer's reader. */
struct job {
        unsigned refs; /* __atomic */
        int cancel;    /* __atomic: the client left */
        int wfd;       /* the stream's write end (-1: not streaming) */
        char *state, *image, *name, *tag, *user, *password;
        struct image_limits lim;
        char rid[32];
};

static void job_unref(struct job *j)
{
        if (!j || __atomic_sub_fetch(&j->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return;
        safe_close(j->wfd);
        free(j->state);
        free(j->image);
        free(j->name);
        free(j->tag);
        free(j->user);
        if (j->password) {
                explicit_bzero(j->password, strlen(j->password));
                free(j->password);
        }
        free(j);
}

static char *dup_opt(const cJSON *body, const char *k, size_t max, bool *bad)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, k);
        if (!v || cJSON_IsNull(v))
                return NULL;
        if (!cJSON_IsString(v) || !*v->valuestring || strlen(v->valuestring) > max) {
                *bad = true;
                return NULL;
        }
        return strdup(v->valuestring);
}

static void write_line(struct job *j, cJSON *o)
{
        _cleanup_free_ char *text = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!text || j->wfd < 0)
                return;
        size_t n = strlen(text);
        text[n] = '\n'; /* the NUL goes: the line ends */
        if (write_full(j->wfd, text, n + 1) < 0)
                __atomic_store_n(&j->cancel, 1, __ATOMIC_RELAXED); /* the reader is gone */
}

static void on_event(void *ud, const struct pull_event *ev)
{
        struct job *j = ud;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", ev->kind);
        cJSON_AddStringToObject(o, "message", ev->message);
        if (ev->digest) {
                cJSON *l = cJSON_AddObjectToObject(o, "layer");
                cJSON_AddStringToObject(l, "digest", ev->digest);
                cJSON_AddNumberToObject(l, "index", ev->index);
                cJSON_AddNumberToObject(l, "count", ev->count);
                cJSON_AddNumberToObject(l, "bytes", (double)ev->bytes);
                cJSON_AddNumberToObject(l, "total", (double)ev->total);
                if (!strcmp(ev->kind, "layer-done"))
                        cJSON_AddBoolToObject(l, "reused", ev->reused);
        }
        if (strcmp(ev->kind, "layer") != 0)
                log_info("req=%s pull: %s", j->rid, ev->message);
        write_line(j, o);
}

static int run(struct job *j, cJSON **ret, char *err)
{
        struct pull_request rq = {.image = j->image,
                                  .name = j->name,
                                  .tag = j->tag,
                                  .username = j->user,
                                  .password = j->password,
                                  .lim = j->lim,
                                  .event = on_event,
                                  .ud = j,
                                  .cancel = &j->cancel};
        int64_t t0 = now_ms();
        int r = pull_image(j->state, &rq, ret, err);
        if (r < 0)
                log_warning("req=%s pull of '%s' failed: %s", j->rid, j->image, err);
        else
                log_info("req=%s pull of '%s' done in %lld ms", j->rid, j->image,
                         (long long)(now_ms() - t0));
        return r;
}

static void *stream_main(void *arg)
{
        struct job *j = arg;
        char err[PULL_ERR_MAX];
        cJSON *img = NULL;
        int r = run(j, &img, err);
        cJSON *o = cJSON_CreateObject();
        if (r >= 0) {
                cJSON_AddStringToObject(o, "status", "done");
                cJSON_AddItemToObject(o, "image", img);
        } else {
                const char *code;
                unsigned status = v1_image_pull_status(r, &code);
                cJSON_AddStringToObject(o, "status", "error");
                cJSON *e = cJSON_AddObjectToObject(o, "error");
                cJSON_AddNumberToObject(e, "status", status);
                cJSON_AddStringToObject(e, "code", code);
                cJSON_AddStringToObject(e, "message", err);
        }
        write_line(j, o);
        j->wfd = safe_close(j->wfd); /* the reader sees the end */
        job_unref(j);
        return NULL;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
        (void)pos;
        int fd = (int)(intptr_t)cls;
        for (;;) {
                ssize_t n = read(fd, buf, max);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
        }
}

static void stream_free(void *cls)
{
        /* the client is gone or the stream ended: a pull still writing gets EPIPE, stops */
        safe_close((int)(intptr_t)cls);
}

static int answer_stream(struct request *req, struct job *j)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        j->wfd = p[1];
        struct MHD_Response *resp = MHD_create_response_from_callback(
            MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, (void *)(intptr_t)p[0], stream_free);
        if (!resp) {
                safe_close(p[0]);
                return -ENOMEM;
        }
        __atomic_add_fetch(&j->refs, 1, __ATOMIC_RELAXED);
        int r = thread_start_detached(stream_main, j, 0);
        if (r < 0) {
                job_unref(j);
                MHD_destroy_response(resp);
                return r;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-ndjson");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
        r = http_queue(req, 200, resp);
        MHD_destroy_response(resp);
        return r;
}

int v1_images_pull(struct request *req)
{
        const cJSON *body = req->body->json;
        bool bad = false;
        struct job *j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->refs = 1;
        j->wfd = -1;
        j->image = dup_opt(body, "image", PULL_REF_MAX, &bad);
        j->name = dup_opt(body, "name", IMAGE_NAME_MAX, &bad);
        j->tag = dup_opt(body, "tag", IMAGE_TAG_MAX, &bad);
        j->user = dup_opt(body, "username", PULL_CRED_MAX, &bad);
        j->password = dup_opt(body, "password", PULL_CRED_MAX, &bad);
        j->state = strdup(req->srv->config->state_dir);
        j->lim = image_limits_of(req->srv->config);
        snprintf(j->rid, sizeof(j->rid), "%s", req->rid);
        if (!j->state) {
                job_unref(j);
                return -ENOMEM;
        }
        if (bad || !j->image || !j->user != !j->password || (j->tag && !j->name)) {
                job_unref(j);
                return v1_reply_error(req, 400, "bad_request",
                                      "the body is {\"image\": REF, \"name\"?, \"tag\"?, "
                                      "\"username\"?, \"password\"?}: non-empty strings (name "
                                      "and tag as image names and tags are, credentials of at "
                                      "most %d bytes), a tag only with a name, a user name only "
                                      "with a password",
                                      PULL_CRED_MAX);
        }
        const char *accept = http_header(req, "Accept");
        if (accept && strstr(accept, "application/x-ndjson")) {
                int r = answer_stream(req, j);
                job_unref(j);
                return r;
        }
        char err[PULL_ERR_MAX];
        _cleanup_json_ cJSON *img = NULL;
        int r = run(j, &img, err);
        job_unref(j);
        if (r < 0) {
                const char *code;
                unsigned status = v1_image_pull_status(r, &code);
                return v1_reply_error(req, status, code, "%s", err);
        }
        return v1_reply_json(req, 201, img, NULL, NULL);
}
