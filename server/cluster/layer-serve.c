/* SPDX-License-Identifier: Apache-2.0 */
/* The node-only routes that hand templates and layers to other nodes (layer-pull.h). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/forward.h"
#include "cluster/layer-pull.h"
#include "core/validate.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "native/v1.h"
#include "storage/layer-export.h"
#include "storage/layer-store.h"
#include "storage/template.h"

#define SERVE_BLOCK (64 * 1024)

/* Only another node calls these (PLACE_NODE_ONLY rows: front/routes.c refuses them without a
 * verified CLUSTER_HOP_HEADER, cluster/hop-auth.h); the key is checked by the route's Bearer
 * auth, the same key file on every node. */
int cluster_handle_template_get(struct request *req)
{
        int r;
        const char *name = req->args.tail ? req->args.tail + 1 : ""; /* {name*}: names of 64 */
        const char *state = req->srv->config->state_dir;
        if (!template_name_valid(name))
                return v1_reply_error(req, 400, "bad_request", "invalid template name");
        struct template_info t = {};
        char path[4096];
        _cleanup_json_ cJSON *j = NULL;
        layer_store_read_lock();
        r = template_load(state, name, &t);
        snprintf(path, sizeof(path), "%s/templates/%s/template.json", state, name);
        _cleanup_close_ int fd = r >= 0 ? open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (r >= 0)
                r = fd < 0 ? -errno : read_all(fd, 1024 * 1024, &text, &len);
        if (r >= 0 && !(j = cJSON_ParseWithLength(text, len)))
                r = -EINVAL;
        /* every layer as a store ref: a template's own layer dirs are put in the store (hard
         * links, cached per dir), as a snapshot of a sandbox of it would */
        cJSON *refs = NULL;
        if (r >= 0)
                r = template_store_refs(state, &t, &refs);
        layer_store_unlock();
        template_done(&t);
        if (r < 0) {
                cJSON_Delete(refs);
                if (r == -ENOENT)
                        return v1_reply_error(req, 404, "not_found", "no template '%s' here", name);
                log_warning_errno(r, "cluster: serving template %s: %m", name);
                return v1_reply_error(req, 500, NULL, "template '%s': %s", name, strerror(-r));
        }
        cJSON_ReplaceItemInObjectCaseSensitive(j, "layers", refs);
        /* a pool snapshot's upper is the top layer now: the other node has its own pool */
        cJSON_DeleteItemFromObjectCaseSensitive(j, "upper");
        return http_reply_cjson(req, 200, j, NULL, NULL);
}

/* A layer's tar: written by a thread into a pipe, read by libmicrohttpd as it sends. */
struct layer_send {
        struct server *srv;
        char hex[LAYER_ID_MAX];
        int pipe[2];
        pthread_t thread;
        bool joined;
        int r; /* the export's result, read after the pipe's end */
};

static void *send_thread(void *p)
{
        struct layer_send *ls = p;
        layer_store_read_lock();
        ls->r = layer_export(ls->srv->config->state_dir, ls->hex, ls->pipe[1]);
        layer_store_unlock();
        if (ls->r < 0 && ls->r != -EPIPE)
                log_warning_errno(ls->r, "cluster: sending layer %.12s: %m", ls->hex);
        close(ls->pipe[1]);
        ls->pipe[1] = -1;
        return NULL;
}

static ssize_t send_read(void *cls, uint64_t pos, char *out, size_t max)
{
        struct layer_send *ls = cls;
        (void)pos;
        for (;;) {
                ssize_t n = read(ls->pipe[0], out, max);
                if (n > 0)
                        return n;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return MHD_CONTENT_READER_END_WITH_ERROR;
                pthread_join(ls->thread, NULL); /* the writer closed: its result is final */
                ls->joined = true;
                return ls->r < 0 ? MHD_CONTENT_READER_END_WITH_ERROR
                                 : MHD_CONTENT_READER_END_OF_STREAM;
        }
}

static void send_free(void *cls)
{
        struct layer_send *ls = cls;
        close(ls->pipe[0]); /* a writer still going gets EPIPE and ends */
        if (!ls->joined)
                pthread_join(ls->thread, NULL);
        free(ls);
}

int cluster_handle_layer_get(struct request *req)
{
        const char *hex = req->args.tail ? req->args.tail + 1 : ""; /* {hex*}: 64 characters */
        int r = layer_store_has(req->srv->config->state_dir, hex);
        if (r < 0)
                return v1_reply_error(req, 400, "bad_request", "not a layer id");
        if (r == 0)
                return v1_reply_error(req, 404, "not_found", "no layer sha256:%.64s here", hex);
        struct layer_send *ls = calloc(1, sizeof(*ls));
        if (!ls)
                return v1_reply_error(req, 500, NULL, "out of memory");
        ls->srv = req->srv;
        snprintf(ls->hex, sizeof(ls->hex), "%s", hex);
        if (pipe2(ls->pipe, O_CLOEXEC) < 0) {
                free(ls);
                return v1_reply_error(req, 500, NULL, "pipe: %s", strerror(errno));
        }
        if (pthread_create(&ls->thread, NULL, send_thread, ls) != 0) {
                close(ls->pipe[0]);
                close(ls->pipe[1]);
                free(ls);
                return v1_reply_error(req, 500, NULL, "cannot start the sender");
        }
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SERVE_BLOCK,
                                                                      send_read, ls, send_free);
        if (!resp) {
                send_free(ls);
                return -ENOMEM;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/x-tar");
        r = http_queue(req, 200, resp);
        MHD_destroy_response(resp);
        return r;
}
