/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/layer-pull.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster/cluster.h"
#include "cluster/node-call.h"
#include "core/validate.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"
#include "storage/layer-export.h"
#include "storage/layer-store.h"
#include "storage/template.h"
#include "time-util.h"

/* ---- one pull per layer ---- */

static pthread_mutex_t pull_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pull_cond = PTHREAD_COND_INITIALIZER;
static char inflight[CLUSTER_PULL_MAX_INFLIGHT][LAYER_ID_MAX];
static size_t n_inflight;

static bool is_inflight(const char *hex)
{
        for (size_t i = 0; i < n_inflight; i++)
                if (strcmp(inflight[i], hex) == 0)
                        return true;
        return false;
}

static void inflight_remove(const char *hex)
{
        for (size_t i = 0; i < n_inflight; i++)
                if (strcmp(inflight[i], hex) == 0) {
                        memcpy(inflight[i], inflight[--n_inflight], LAYER_ID_MAX);
                        break;
                }
}

struct stream_job {
        struct server *srv;
        char addr[CLUSTER_ADDR_MAX + 1];
        char target[128];
        int fd;
        uint64_t bytes;
        int r;
        char err[256];
};

static void *stream_thread(void *p)
{
        struct stream_job *j = p;
        j->r = node_stream(j->srv, j->addr, j->target, j->fd, CLUSTER_PULL_LAYER_MAX,
                           CLUSTER_PULL_LAYER_TIME_S, &j->bytes, j->err, sizeof(j->err));
        return NULL;
}

/* The transfer: curl writes into a pipe on a thread of its own, the store's importer reads
 * the other end; the layer is kept only when its hash is hex. */
static int fetch_layer(struct server *srv, const char *addr, const char *hex, uint64_t *ret_bytes,
                       char *errmsg, size_t errlen)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        struct stream_job j = {.srv = srv, .fd = p[1]};
        snprintf(j.addr, sizeof(j.addr), "%s", addr);
        snprintf(j.target, sizeof(j.target), "/v1/cluster/layers/%s", hex);
        pthread_t t;
        int r = -pthread_create(&t, NULL, stream_thread, &j);
        if (r < 0) {
                close(p[0]);
                close(p[1]);
                return r;
        }
        char err[IMAGE_LAYER_ERR_MAX];
        int64_t t0 = now_us();
        layer_store_read_lock();
        r = layer_import_stream(srv->config->state_dir, p[0], hex, err);
        layer_store_unlock();
        close(p[0]); /* a stream the importer stopped reading: the sender gets EPIPE */
        pthread_join(t, NULL);
        *ret_bytes = j.bytes;
        if (r < 0) {
                /* the transfer's own failure explains a tar cut short better */
                if (j.r < 0 && j.r != -EPIPE)
                        snprintf(errmsg, errlen, "pulling layer %.12s from %s: %s", hex, addr,
                                 j.err);
                else
                        snprintf(errmsg, errlen, "pulling layer %.12s from %s: %s", hex, addr,
                                 err[0] ? err : strerror(-r));
                return r == -EBADMSG || j.r == -EFBIG || j.r == -ETIMEDOUT ? (j.r < 0 ? j.r : r)
                                                                           : -EIO;
        }
        int64_t us = MAX(now_us() - t0, (int64_t)1);
        log_info("cluster: layer %.12s pulled from %s: %llu bytes in %lld ms (%.1f MB/s)", hex,
                 addr, (unsigned long long)j.bytes, (long long)(us / 1000),
                 (double)j.bytes / (double)us);
        return 0;
}

int cluster_pull_layer(struct server *srv, const char *addr, const char *hex, uint64_t *ret_bytes,
                       char *errmsg, size_t errlen)
{
        const char *state = srv->config->state_dir;
        uint64_t bytes = 0;
        int r = 0;
        pthread_mutex_lock(&pull_lock);
        for (;;) {
                r = layer_store_has(state, hex);
                if (r != 0)
                        break; /* there (1), or not a layer id */
                if (!is_inflight(hex) && n_inflight < CLUSTER_PULL_MAX_INFLIGHT)
                        break; /* this call pulls it */
                pthread_cond_wait(&pull_cond, &pull_lock);
        }
        if (r != 0) {
                pthread_mutex_unlock(&pull_lock);
                if (ret_bytes)
                        *ret_bytes = 0;
                if (r < 0)
                        snprintf(errmsg, errlen, "'%.80s' is not a layer id", hex);
                return r < 0 ? r : 0;
        }
        memcpy(inflight[n_inflight++], hex, LAYER_ID_MAX);
        pthread_mutex_unlock(&pull_lock);
        r = fetch_layer(srv, addr, hex, &bytes, errmsg, errlen);
        pthread_mutex_lock(&pull_lock);
        inflight_remove(hex);
        pthread_cond_broadcast(&pull_cond);
        pthread_mutex_unlock(&pull_lock);
        if (ret_bytes)
                *ret_bytes = bytes;
        return r;
}

/* ---- a template ---- */

/* "sha256:<hex>" → hex; NULL for anything else. */
static const char *ref_hex(const cJSON *l)
{
        if (!cJSON_IsString(l) || strncmp(l->valuestring, LAYER_PREFIX, strlen(LAYER_PREFIX)) != 0)
                return NULL;
        const char *hex = l->valuestring + strlen(LAYER_PREFIX);
        return strspn(hex, "0123456789abcdef") == 64 && !hex[64] ? hex : NULL;
}

/* templates/<name>/template.json, atomically (a temp dir renamed into place); a template
 * that arrived meanwhile (another pull) is kept. */
static int write_template(const char *state, const char *name, const char *text)
{
        char tmp[4096], path[4200], final[4096], rnd[17];
        int r = random_hex(rnd, 8);
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/templates", state);
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return -errno;
        snprintf(tmp, sizeof(tmp), "%s/templates/.pull-%s", state, rnd);
        snprintf(final, sizeof(final), "%s/templates/%s", state, name);
        if (mkdir(tmp, 0755) < 0)
                return -errno;
        snprintf(path, sizeof(path), "%s/template.json", tmp);
        r = write_file_atomic(path, text, strlen(text), 0644);
        if (r >= 0 && rename(tmp, final) < 0)
                r = errno == ENOTEMPTY || errno == EEXIST ? 0 : -errno;
        rm_rf(tmp); /* gone when renamed */
        return r;
}

void cluster_seed_template(struct server *srv, const char *name)
{
        const char *state = srv->config->state_dir;
        struct template_info t = {};
        const cJSON *l;
        if (!name || !template_name_valid(name) || template_load(state, name, &t) < 0)
                return;
        cJSON_ArrayForEach(l, t.layers)
        {
                char hex[LAYER_ID_MAX];
                if (!layer_store_is_layer(state, l->valuestring, hex) &&
                    layer_store_import_dir(state, l->valuestring, hex) < 0)
                        log_debug("cluster: template %s: layer %s not put in the store", name,
                                  l->valuestring);
        }
        template_done(&t);
}

/* Pull name from the node at addr: its template.json, each layer it lacks, then the
 * template. Under the store's read lock from the first layer to the template (gc would
 * otherwise take a layer nothing references yet). */
static int pull_from(struct server *srv, const char *node, const char *addr, const char *name,
                     char *errmsg, size_t errlen)
{
        char target[256];
        struct node_answer a;
        snprintf(target, sizeof(target), "/v1/cluster/templates/%s", name);
        int r = node_call(srv, addr, "GET", target, NULL, 0, CLUSTER_PULL_TEMPLATE_MS, &a);
        if (r < 0)
                return r;
        if (a.status != 200) {
                long status = a.status;
                snprintf(errmsg, errlen, "template '%s' on node %s: %s", name, node,
                         status ? "refused" : a.error);
                if (status != 404) /* 404: not there (asked when nobody advertised it) */
                        log_warning("cluster: template %s from node %s: %ld %.200s", name, node,
                                    status, a.body ? a.body : a.error);
                node_answer_done(&a);
                return status == 404 ? -ENOENT : -EIO;
        }
        _cleanup_json_ cJSON *j = cJSON_ParseWithLength(a.body ? a.body : "", a.len);
        node_answer_done(&a);
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers"), *l;
        int n = cJSON_GetArraySize(layers);
        if (!cJSON_IsObject(j) || !cJSON_IsArray(layers) || n < 1 || n > TEMPLATE_MAX_LAYERS) {
                snprintf(errmsg, errlen, "template '%s' from node %s: not a template", name, node);
                return -EIO;
        }
        cJSON_ArrayForEach(l, layers)
        {
                if (!ref_hex(l)) {
                        snprintf(errmsg, errlen,
                                 "template '%s' from node %s: a layer that is not sha256:<hex>",
                                 name, node);
                        return -EIO;
                }
        }
        int64_t t0 = now_us();
        uint64_t total = 0;
        unsigned pulled = 0;
        layer_store_read_lock();
        /* a snapshot's lower layers are its template's: this node's copy of that template
         * has them when it was built from the same files (no transfer then) */
        const cJSON *from = cJSON_GetObjectItemCaseSensitive(j, "fromTemplate");
        if (cJSON_IsString(from)) {
                cluster_seed_template(srv, from->valuestring);
                log_info("cluster: template %s: its template %s's own layers looked at here in "
                         "%lld ms",
                         name, from->valuestring, (long long)((now_us() - t0) / 1000));
        }
        cJSON_ArrayForEach(l, layers)
        {
                uint64_t bytes = 0;
                r = cluster_pull_layer(srv, addr, ref_hex(l), &bytes, errmsg, errlen);
                if (r < 0)
                        break;
                total += bytes;
                pulled += bytes > 0;
        }
        cJSON_AddStringToObject(j, "pulledFrom", node);
        _cleanup_free_ char *text = r >= 0 ? cJSON_Print(j) : NULL;
        if (r >= 0)
                r = text ? write_template(srv->config->state_dir, name, text) : -ENOMEM;
        layer_store_unlock();
        if (r < 0) {
                if (!errmsg[0])
                        snprintf(errmsg, errlen, "writing template '%s': %s", name, strerror(-r));
                return r;
        }
        log_info("cluster: template %s pulled from node %s: %u of %d layers, %llu bytes in %lld ms",
                 name, node, pulled, n, (unsigned long long)total,
                 (long long)((now_us() - t0) / 1000));
        return 0;
}

static bool advertises(const struct cluster_node *n, const char *name)
{
        char want[TEMPLATE_NAME_MAX + 3];
        snprintf(want, sizeof(want), ",%s,", name);
        return n->templates && strstr(n->templates, want) != NULL;
}

int cluster_hook_pull_template(struct server *srv, const char *name, char *errmsg, size_t errlen)
{
        if (!srv->cluster || !template_name_valid(name))
                return -ENOENT;
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        int r = cluster_nodes(srv->cluster, &nodes, &n);
        if (r < 0)
                return r;
        const char *self = cluster_self(srv->cluster);
        char err[512] = "";
        r = -ENOENT;
        /* the nodes that advertise it first; then, when none had it, every other live node:
         * a template made a moment ago (a snapshot) is advertised at its node's next beat */
        for (int pass = 0; pass < 2 && r == -ENOENT; pass++)
                for (size_t i = 0; i < n && r < 0; i++) {
                        if (strcmp(nodes[i].name, self) == 0 ||
                            advertises(&nodes[i], name) != (pass == 0))
                                continue;
                        char e[512] = "";
                        int k = pull_from(srv, nodes[i].name, nodes[i].addr, name, e, sizeof(e));
                        if (k < 0 && k != -ENOENT) {
                                log_warning("cluster: pulling template %s: %s", name, e);
                                if (!err[0])
                                        snprintf(err, sizeof(err), "%s", e);
                        }
                        if (k >= 0 || r == -ENOENT)
                                r = k;
                }
        cluster_nodes_free(nodes, n);
        if (r < 0 && r != -ENOENT)
                snprintf(errmsg, errlen,
                         "template '%s' is on another node but could not be pulled: %s", name, err);
        return r;
}
