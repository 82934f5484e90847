/* SPDX-License-Identifier: Apache-2.0 */
#include "pull/pull.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "macros.h"
#include "pull/pull-layer.h"
#include "sha256.h"
#include "time-util.h"

#define MT_OCI_INDEX       "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST    "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST     "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_V1       "application/vnd.docker.distribution.manifest.v1"
#define ACCEPT_MANIFESTS                                                                           \
        MT_OCI_INDEX ", " MT_OCI_MANIFEST ", " MT_DOCKER_LIST ", " MT_DOCKER_MANIFEST
#define SYSTEM_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define REGISTRY_CA_MAX  (4 * 1024 * 1024)

static struct pull_options opts;

_printf_(2, 3) static int say(char *err, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, PULL_ERR_MAX, fmt, ap);
        va_end(ap);
        return 0;
}

/* ---- setup ---- */

/* "http(s)://HOST[:PORT][/]" → HOST[:PORT] and whether it is plain HTTP. */
static void mirror_host(const char *url, char *host, size_t size, bool *ret_http)
{
        bool http = strncmp(url, "http://", 7) == 0;
        const char *h = url + (http ? 7 : 8);
        snprintf(host, size, "%.*s", (int)MIN(strcspn(h, "/"), size - 1), h);
        for (char *c = host; *c; c++)
                if (*c >= 'A' && *c <= 'Z')
                        *c = (char)(*c + 32);
        *ret_http = http;
}

static bool is_insecure(const char *host)
{
        for (size_t i = 0; i < opts.n_insecure; i++)
                if (strcasecmp(opts.insecure[i], host) == 0)
                        return true;
        return false;
}

static int read_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        return fd < 0 ? -errno : read_all(fd, max, ret, ret_len);
}

/* The host's CA bundle and --registry-ca, as one PEM blob. */
static int load_ca(const char *extra, char *err)
{
        _cleanup_free_ char *sys = NULL, *mine = NULL;
        size_t sl = 0, ml = 0;
        const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
        const char *bundle = v && v->cainfo ? v->cainfo : SYSTEM_CA_BUNDLE;
        int r = read_file(extra, REGISTRY_CA_MAX, &mine, &ml);
        if (r < 0)
                return say(err, "--registry-ca %s: %s", extra, strerror(-r)), -EINVAL;
        if (!strstr(mine, "-----BEGIN CERTIFICATE-----"))
                return say(err, "--registry-ca %s holds no PEM certificate", extra), -EINVAL;
        if (read_file(bundle, 64 * 1024 * 1024, &sys, &sl) < 0)
                sl = 0; /* no host bundle: the given CA alone */
        opts.ca_blob = malloc(sl + ml + 2);
        if (!opts.ca_blob)
                return -ENOMEM;
        memcpy(opts.ca_blob, sys ? sys : "", sl);
        opts.ca_blob[sl] = '\n';
        memcpy(opts.ca_blob + sl + 1, mine, ml);
        opts.ca_len = sl + 1 + ml;
        opts.ca_blob[opts.ca_len] = 0;
        opts.extra_ca = true;
        return 0;
}

static char **copy_list(char *const *v, size_t n)
{
        char **c = n ? calloc(n, sizeof(*c)) : NULL;
        for (size_t i = 0; c && i < n; i++)
                if (!(c[i] = strdup(v[i]))) {
                        while (i-- > 0)
                                free(c[i]);
                        free(c);
                        return NULL;
                }
        return c;
}

int pull_setup(const struct sbxd_config *cfg, char err[static PULL_ERR_MAX])
{
        err[0] = 0;
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return say(err, "libcurl failed to start"), -ENOMEM;
        /* copies: a detached pull may outlive main's config */
        opts.mirrors = copy_list(cfg->registry_mirrors, cfg->n_registry_mirrors);
        opts.insecure = copy_list(cfg->insecure_registries, cfg->n_insecure_registries);
        if ((cfg->n_registry_mirrors && !opts.mirrors) ||
            (cfg->n_insecure_registries && !opts.insecure))
                return -ENOMEM;
        opts.n_mirrors = cfg->n_registry_mirrors;
        opts.n_insecure = cfg->n_insecure_registries;
        for (size_t i = 0; i < opts.n_mirrors; i++) {
                char host[PULL_HOST_MAX];
                bool http;
                mirror_host(opts.mirrors[i], host, sizeof(host), &http);
                if (http && !pull_host_is_loopback(host) && !is_insecure(host))
                        return say(err,
                                   "--registry-mirror %s is plain HTTP: only for a loopback "
                                   "address or an --insecure-registry %s",
                                   opts.mirrors[i], host),
                               -EINVAL;
        }
        return cfg->registry_ca ? load_ca(cfg->registry_ca, err) : 0;
}

int pull_template_id(const char *image, char ret_id[static IMAGE_ID_MAX],
                     char err[static PULL_ERR_MAX])
{
        struct pull_ref ref;
        char name[IMAGE_NAME_MAX + 1], tag[IMAGE_TAG_MAX + 1];
        int r = pull_ref_parse(image, &ref, err);
        if (r < 0)
                return r;
        pull_ref_image_name(&ref, name, tag);
        if (image_template_id(name, tag, ret_id) < 0)
                return say(err, "'%.200s' makes no valid template name", image), -EINVAL;
        return 0;
}

/* ---- one pull ---- */

struct pull {
        const char *state;
        const struct pull_request *rq;
        struct pull_ref ref;
        char refstr[PULL_REF_MAX + 80];
        struct pull_creds creds;
        struct pull_remote rm;
        bool have_rm;
        void *h; /* the pull's own libcurl handle (manifests, config) */
        int stop;
        pthread_mutex_t lock; /* events, the next job, the first error */
        /* the image */
        char *manifest;
        size_t manifest_len;
        char manifest_digest[72], index_digest[72];
        bool oci;
        char *config;
        size_t config_len;
        /* the layers */
        struct pull_layer_job *jobs;
        size_t n_jobs, next_job;
        int64_t *last_report; /* per job, ms */
        int first_err;
        char *err;
};

static void emit(struct pull *p, const struct pull_event *ev)
{
        if (!p->rq->event)
                return;
        pthread_mutex_lock(&p->lock);
        p->rq->event(p->rq->ud, ev);
        pthread_mutex_unlock(&p->lock);
}

_printf_(3, 4) static void note(struct pull *p, const char *kind, const char *fmt, ...)
{
        char msg[PULL_ERR_MAX + 128];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        emit(p, &(struct pull_event){.kind = kind, .message = msg});
}

static bool cancelled(struct pull *p)
{
        if (p->rq->cancel && __atomic_load_n(p->rq->cancel, __ATOMIC_RELAXED))
                __atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
        return __atomic_load_n(&p->stop, __ATOMIC_RELAXED);
}

static void sha256_hex(const char *data, size_t len, char out[65])
{
        struct sha256 h;
        sha256_init(&h);
        sha256_update(&h, data, len);
        sha256_final_hex(&h, out);
}

static const char *jstr(const cJSON *o, const char *k)
{
        return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* "sha256:<64 lower-case hex>": a digest a registry sent, before it goes into a URL. */
static bool digest_valid(const char *d)
{
        return d && strncmp(d, "sha256:", 7) == 0 && strlen(d) == 71 &&
               strspn(d + 7, "0123456789abcdef") == 64;
}

/* A manifest (or index) by tag or digest, checked, into p->manifest. */
static int fetch_manifest(struct pull *p, const char *reference, char *ret_type, size_t tsize)
{
        char path[PULL_REPO_MAX + PULL_TAG_MAX + 32], hex[65];
        struct pull_sink sink = {.fd = -1, .max = IMAGE_MAX_JSON};
        struct pull_answer ans;
        snprintf(path, sizeof(path), "/v2/%s/manifests/%s", p->rm.repo, reference);
        int r = pull_http_get(&p->rm, &p->h, path, ACCEPT_MANIFESTS, &sink, &ans, p->err);
        if (r < 0) {
                pull_sink_done(&sink);
                return r == -EFBIG ? -EPROTO : r; /* past IMAGE_MAX_JSON: not a manifest */
        }
        sha256_hex(sink.buf ? sink.buf : "", sink.len, hex);
        const char *want = strncmp(reference, "sha256:", 7) == 0 ? reference + 7 : NULL;
        const char *said = strncmp(ans.digest, "sha256:", 7) == 0 ? ans.digest + 7 : NULL;
        if ((want && strcmp(want, hex) != 0) || (said && strcmp(said, hex) != 0)) {
                say(p->err,
                    "the manifest registry %s sent for %.200s is not sha256:%.64s (its bytes "
                    "hash to sha256:%s): refused",
                    p->rm.host, reference, want ? want : said, hex);
                pull_sink_done(&sink);
                return -EBADMSG;
        }
        free(p->manifest);
        p->manifest = TAKE_PTR(sink.buf);
        p->manifest_len = sink.len;
        snprintf(p->manifest_digest, sizeof(p->manifest_digest), "sha256:%s", hex);
        /* the media type: the answer's Content-Type, else the manifest's own mediaType */
        _cleanup_json_ cJSON *j = cJSON_ParseWithLength(p->manifest, p->manifest_len);
        const char *mt = jstr(j, "mediaType");
        size_t cl = strcspn(ans.content_type, "; ");
        if (mt && *mt)
                snprintf(ret_type, tsize, "%s", mt);
        else
                snprintf(ret_type, tsize, "%.*s", (int)cl, ans.content_type);
        if (!cJSON_IsObject(j))
                return say(p->err, "the manifest of %s is not a JSON object", p->refstr), -EINVAL;
        return 0;
}

/* The endpoints of p->ref in order: the mirrors (docker.io only), then the registry. */
static int open_remote(struct pull *p, size_t i, bool *ret_last, char *ret_host, size_t hsize)
{
        bool hub = strcmp(p->ref.host, PULL_DOCKER_HUB) == 0;
        size_t mirrors = hub ? opts.n_mirrors : 0;
        *ret_last = i == mirrors;
        if (i > mirrors)
                return -ENOENT;
        if (p->have_rm)
                pull_remote_done(&p->rm);
        p->have_rm = false;
        pull_creds_done(&p->creds);
        bool http = false;
        if (i < mirrors)
                mirror_host(opts.mirrors[i], ret_host, hsize, &http);
        else
                snprintf(ret_host, hsize, "%s", hub ? PULL_DOCKER_HUB_API : p->ref.host);
        /* the request's credentials are for the registry it named; a mirror's come from
         * sbxd's config.json */
        int r = 0;
        bool given = i == mirrors && p->rq->username;
        if (given)
                r = pull_creds_set(&p->creds, p->rq->username, p->rq->password);
        else
                r = pull_creds_lookup(i == mirrors ? p->ref.host : ret_host, &p->creds);
        if (r < 0)
                return say(p->err, "%s: %s",
                           given ? "the registry credentials given are unusable"
                                 : "sbxd's Docker config.json cannot be read",
                           r == -EINVAL ? "malformed" : strerror(-r)),
                       -EINVAL;
        pull_remote_init(&p->rm, &opts, ret_host, p->ref.repo, &p->creds, &p->stop);
        if (http) {
                p->rm.plain_ok = true;
                snprintf(p->rm.scheme, sizeof(p->rm.scheme), "http");
        }
        p->have_rm = true;
        return 0;
}

static bool is_index(const char *mt)
{
        return strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0;
}

/* The linux/amd64 image of an index: its digest. */
static int pick_platform(struct pull *p, char *ret_digest, size_t size)
{
        _cleanup_json_ cJSON *j = cJSON_ParseWithLength(p->manifest, p->manifest_len);
        const cJSON *d, *list = cJSON_GetObjectItemCaseSensitive(j, "manifests");
        char seen[300] = "";
        cJSON_ArrayForEach(d, list)
        {
                const cJSON *pl = cJSON_GetObjectItemCaseSensitive(d, "platform");
                const char *os = jstr(pl, "os"), *arch = jstr(pl, "architecture");
                const char *mt = jstr(d, "mediaType"), *dg = jstr(d, "digest");
                if (mt && strcmp(mt, MT_OCI_MANIFEST) != 0 && strcmp(mt, MT_DOCKER_MANIFEST) != 0)
                        continue;
                if (os && arch && strlen(seen) < 200 && strcmp(os, "unknown") != 0)
                        snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%s%.20s/%.20s",
                                 seen[0] ? ", " : "", os, arch);
                if (!os || !arch || strcmp(os, "linux") != 0 || strcmp(arch, "amd64") != 0 ||
                    !digest_valid(dg))
                        continue;
                snprintf(ret_digest, size, "%s", dg);
                return 0;
        }
        return say(p->err, "%s has no image for linux/amd64 (it has: %s)", p->refstr,
                   seen[0] ? seen : "none"),
               -EINVAL;
}

/* The image manifest of p->ref from the first endpoint that has it. */
static int resolve_manifest(struct pull *p)
{
        char mt[128], host[PULL_HOST_MAX], first_err[PULL_ERR_MAX] = "";
        int r = -ENOENT, first_r = 0;
        bool last = false;
        for (size_t i = 0; !last; i++) {
                if (open_remote(p, i, &last, host, sizeof(host)) < 0)
                        break;
                r = fetch_manifest(p, pull_ref_reference(&p->ref), mt, sizeof(mt));
                if (r >= 0 || r == -ECANCELED)
                        break;
                if (!last)
                        note(p, "resolving", "mirror %s: %s; trying the next", host, p->err);
                if (!first_r) {
                        first_r = r;
                        snprintf(first_err, sizeof(first_err), "%s", p->err);
                }
        }
        if (r < 0 && first_r && first_r != r && r == -EHOSTUNREACH) {
                /* every endpoint failed: the mirror's answer says more than an unreachable
                 * Docker Hub does */
                snprintf(p->err, PULL_ERR_MAX, "%s", first_err);
                r = first_r;
        }
        if (r < 0)
                return r;
        if (is_index(mt)) {
                char digest[80];
                snprintf(p->index_digest, sizeof(p->index_digest), "%s", p->manifest_digest);
                if ((r = pick_platform(p, digest, sizeof(digest))) < 0 ||
                    (r = fetch_manifest(p, digest, mt, sizeof(mt))) < 0)
                        return r;
                if (is_index(mt))
                        return say(p->err, "%s: an index inside an index is not supported",
                                   p->refstr),
                               -EINVAL;
        }
        if (strncmp(mt, MT_DOCKER_V1, strlen(MT_DOCKER_V1)) == 0)
                return say(p->err,
                           "%s is a Docker schema 1 image, which registries no longer serve and "
                           "sbx does not read: push it again with a current docker or skopeo",
                           p->refstr),
                       -EINVAL;
        if (strcmp(mt, MT_OCI_MANIFEST) != 0 && strcmp(mt, MT_DOCKER_MANIFEST) != 0)
                return say(p->err, "%s: a manifest of type '%.100s' is not an image", p->refstr,
                           mt),
                       -EINVAL;
        p->oci = strcmp(mt, MT_OCI_MANIFEST) == 0;
        return 0;
}

/* The config blob, checked, into p->config. */
static int fetch_config(struct pull *p, const cJSON *man)
{
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(man, "config");
        const char *d = jstr(c, "digest");
        char path[PULL_REPO_MAX + 96], hex[65];
        if (!digest_valid(d))
                return say(p->err, "the manifest of %s has no sha256 config digest", p->refstr),
                       -EINVAL;
        snprintf(path, sizeof(path), "/v2/%s/blobs/%s", p->rm.repo, d);
        struct pull_sink sink = {.fd = -1, .max = IMAGE_MAX_JSON};
        struct pull_answer ans;
        int r = pull_http_get(&p->rm, &p->h, path, NULL, &sink, &ans, p->err);
        if (r == -EFBIG)
                r = -EPROTO; /* past IMAGE_MAX_JSON: not a config */
        if (r >= 0) {
                sha256_hex(sink.buf ? sink.buf : "", sink.len, hex);
                if (strcmp(hex, d + 7) != 0)
                        r = -EBADMSG, say(p->err,
                                          "the config blob registry %s sent for %s does not "
                                          "match its digest: refused",
                                          p->rm.host, p->refstr);
        }
        if (r >= 0) {
                p->config = TAKE_PTR(sink.buf);
                p->config_len = sink.len;
        }
        pull_sink_done(&sink);
        return r;
}

/* The image as image-manifest reads an OCI layout: the plan (layers, config's fields). */
static int make_plan(struct pull *p, struct image_plan *ret)
{
        struct image_members m = {};
        char path[96], ierr[IMAGE_ERR_MAX];
        _cleanup_json_ cJSON *index = cJSON_CreateObject();
        cJSON *list = cJSON_AddArrayToObject(index, "manifests");
        cJSON *d = cJSON_CreateObject();
        cJSON_AddItemToArray(list, d);
        cJSON_AddNumberToObject(index, "schemaVersion", 2);
        cJSON_AddStringToObject(d, "mediaType", p->oci ? MT_OCI_MANIFEST : MT_DOCKER_MANIFEST);
        cJSON_AddStringToObject(d, "digest", p->manifest_digest);
        cJSON_AddNumberToObject(d, "size", (double)p->manifest_len);
        _cleanup_free_ char *text = cJSON_PrintUnformatted(index);
        _cleanup_json_ cJSON *man = cJSON_ParseWithLength(p->manifest, p->manifest_len);
        char cpath[96];
        snprintf(path, sizeof(path), "blobs/sha256/%s", p->manifest_digest + 7);
        snprintf(cpath, sizeof(cpath), "blobs/sha256/%s",
                 jstr(cJSON_GetObjectItemCaseSensitive(man, "config"), "digest") + 7);
        int r = text ? 0 : -ENOMEM;
        if (r >= 0)
                r = image_members_add(&m, "index.json", text, strlen(text));
        if (r >= 0)
                r = image_members_add(&m, path, p->manifest, p->manifest_len);
        if (r >= 0)
                r = image_members_add(&m, cpath, p->config, p->config_len);
        if (r >= 0) {
                r = image_plan_resolve(&m, NULL, "amd64", ret, ierr);
                if (r == -EINVAL)
                        say(p->err, "%s: %s", p->refstr, ierr);
        }
        image_members_done(&m);
        return r;
}

/* The layers' sizes (the plan has their digests, in the same order). */
static int make_jobs(struct pull *p, const struct image_plan *plan)
{
        _cleanup_json_ cJSON *man = cJSON_ParseWithLength(p->manifest, p->manifest_len);
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(man, "layers");
        if ((size_t)cJSON_GetArraySize(layers) != plan->n_layers)
                return say(p->err, "%s: the manifest's layers are unusable", p->refstr), -EINVAL;
        p->jobs = calloc(plan->n_layers, sizeof(*p->jobs));
        p->last_report = calloc(plan->n_layers, sizeof(*p->last_report));
        if (!p->jobs || !p->last_report)
                return -ENOMEM;
        p->n_jobs = plan->n_layers;
        for (size_t i = 0; i < plan->n_layers; i++) {
                const cJSON *sz =
                    cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(layers, (int)i), "size");
                if (!cJSON_IsNumber(sz) || sz->valuedouble < 1 || sz->valuedouble > 1e15)
                        return say(p->err, "%s: layer %zu has no size in the manifest", p->refstr,
                                   i + 1),
                               -EINVAL;
                struct pull_layer_job *j = &p->jobs[i];
                j->state = p->state;
                j->rm = &p->rm;
                memcpy(j->digest, plan->layers[i].digest, sizeof(j->digest));
                j->size = (uint64_t)sz->valuedouble;
                j->lim = p->rq->lim;
                j->stop = &p->stop;
                j->ud = p;
        }
        return 0;
}

static void on_layer_bytes(struct pull_layer_job *j, uint64_t bytes)
{
        struct pull *p = j->ud;
        size_t i = (size_t)(j - p->jobs);
        int64_t now = now_ms();
        if (cancelled(p))
                return;
        if (now - p->last_report[i] < PULL_PROGRESS_MS && bytes < j->size)
                return;
        p->last_report[i] = now;
        char digest[80], msg[200];
        snprintf(digest, sizeof(digest), "sha256:%s", j->digest);
        snprintf(msg, sizeof(msg), "layer %zu/%zu sha256:%.12s: %.1f of %.1f MB", i + 1, p->n_jobs,
                 j->digest, (double)bytes / 1e6, (double)j->size / 1e6);
        emit(p, &(struct pull_event){.kind = "layer",
                                     .message = msg,
                                     .digest = digest,
                                     .bytes = bytes,
                                     .total = j->size,
                                     .index = (unsigned)i + 1,
                                     .count = (unsigned)p->n_jobs});
}

static void *layer_worker(void *arg)
{
        struct pull *p = arg;
        void *h = NULL;
        for (;;) {
                pthread_mutex_lock(&p->lock);
                size_t i = p->next_job < p->n_jobs && !p->first_err ? p->next_job++ : SIZE_MAX;
                pthread_mutex_unlock(&p->lock);
                if (i == SIZE_MAX || cancelled(p))
                        break;
                struct pull_layer_job *j = &p->jobs[i];
                j->progress = on_layer_bytes;
                int r = pull_layer_fetch(j, &h);
                if (r < 0) {
                        pthread_mutex_lock(&p->lock);
                        if (!p->first_err) {
                                p->first_err = r;
                                snprintf(p->err, PULL_ERR_MAX, "%s", j->err);
                        }
                        pthread_mutex_unlock(&p->lock);
                        __atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
                        pull_layer_wake();
                        break;
                }
                char digest[80], msg[240];
                snprintf(digest, sizeof(digest), "sha256:%s", j->digest);
                snprintf(msg, sizeof(msg), "layer %zu/%zu sha256:%.12s: %s (%.1f MB)", i + 1,
                         p->n_jobs, j->digest,
                         j->transferred ? "pulled" : "already in the layer store",
                         (double)j->size / 1e6);
                emit(p, &(struct pull_event){.kind = "layer-done",
                                             .message = msg,
                                             .digest = digest,
                                             .bytes = j->transferred ? j->size : 0,
                                             .total = j->size,
                                             .index = (unsigned)i + 1,
                                             .count = (unsigned)p->n_jobs,
                                             .reused = !j->transferred});
        }
        if (h)
                curl_easy_cleanup(h);
        return NULL;
}

static int fetch_layers(struct pull *p)
{
        pthread_t t[PULL_PARALLEL_LAYERS];
        size_t n = MIN(p->n_jobs, (size_t)PULL_PARALLEL_LAYERS), started = 0;
        for (; started < n; started++)
                if (pthread_create(&t[started], NULL, layer_worker, p) != 0)
                        break;
        if (started == 0)
                layer_worker(p);
        for (size_t i = 0; i < started; i++)
                pthread_join(t[i], NULL);
        if (p->first_err)
                return p->first_err;
        if (cancelled(p))
                return say(p->err, "the pull was cancelled"), -ECANCELED;
        return 0;
}

static cJSON *source_json(const struct pull *p)
{
        cJSON *x = cJSON_CreateObject();
        cJSON *s = cJSON_AddObjectToObject(x, "source");
        cJSON_AddStringToObject(s, "reference", p->refstr);
        cJSON_AddStringToObject(s, "registry", p->rm.host);
        if (p->index_digest[0])
                cJSON_AddStringToObject(s, "indexDigest", p->index_digest);
        cJSON_AddStringToObject(x, "format", p->oci ? "oci" : "docker");
        return x;
}

static void pull_done(struct pull *p)
{
        for (size_t i = 0; i < p->n_jobs; i++)
                if (p->jobs[i].out.hex[0])
                        layer_store_unpin(p->jobs[i].out.hex);
        free(p->jobs);
        free(p->last_report);
        free(p->manifest);
        free(p->config);
        if (p->have_rm)
                pull_remote_done(&p->rm);
        pull_creds_done(&p->creds);
        if (p->h)
                curl_easy_cleanup(p->h);
        pthread_mutex_destroy(&p->lock);
}

int pull_image(const char *state, const struct pull_request *rq, cJSON **ret,
               char err[static PULL_ERR_MAX])
{
        struct pull p = {.state = state, .rq = rq, .err = err};
        struct image_plan plan = {};
        char name[IMAGE_NAME_MAX + 1], tag[IMAGE_TAG_MAX + 1], id[IMAGE_ID_MAX],
            ierr[IMAGE_ERR_MAX];
        err[0] = 0;
        pthread_mutex_init(&p.lock, NULL);
        int r = pull_ref_parse(rq->image, &p.ref, err);
        if (r >= 0 && !rq->username != !rq->password)
                r = -EINVAL, say(err, "registry credentials need both a user name and a password");
        if (r >= 0) {
                pull_ref_format(&p.ref, p.refstr, sizeof(p.refstr));
                pull_ref_image_name(&p.ref, name, tag);
                if (rq->name)
                        snprintf(name, sizeof(name), "%s", rq->name);
                if (rq->name || rq->tag)
                        snprintf(tag, sizeof(tag), "%s", rq->tag ? rq->tag : "latest");
                r = image_template_check(state, name, tag, id, ierr);
                if (r < 0)
                        say(err, "%s", ierr);
        }
        if (r >= 0) {
                note(&p, "resolving", "pulling %s", p.refstr);
                r = resolve_manifest(&p);
        }
        _cleanup_json_ cJSON *man =
            r >= 0 ? cJSON_ParseWithLength(p.manifest, p.manifest_len) : NULL;
        if (r >= 0 && !cancelled(&p))
                r = fetch_config(&p, man);
        if (r >= 0 && !cancelled(&p))
                r = make_plan(&p, &plan);
        if (r >= 0)
                r = make_jobs(&p, &plan);
        if (r >= 0) {
                note(&p, "resolved", "%s is %s: %zu layer(s), from %s", p.refstr, p.manifest_digest,
                     plan.n_layers, p.rm.host);
                r = fetch_layers(&p);
        }
        if (r >= 0) {
                _cleanup_json_ cJSON *extra = source_json(&p);
                _cleanup_free_ struct image_layer_out *outs = calloc(plan.n_layers, sizeof(*outs));
                for (size_t i = 0; outs && i < plan.n_layers; i++)
                        outs[i] = p.jobs[i].out;
                layer_store_read_lock();
                r = outs && extra
                        ? image_template_publish(state, name, tag, &plan, outs, extra, ret, ierr)
                        : -ENOMEM;
                layer_store_unlock();
                if (r < 0)
                        say(err, "%s", ierr[0] ? ierr : strerror(-r));
        }
        if (r >= 0)
                note(&p, "template", "%s is template '%s'", p.refstr, id);
        else if (r == -ECANCELED && !err[0])
                say(err, "the pull was cancelled");
        image_plan_done(&plan);
        pull_done(&p);
        return r;
}
