/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/image-manifest.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format-util.h"
#include "json-util.h"
#include "macros.h"
#include "sha256.h"

#define MT_OCI_INDEX       "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST    "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST     "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define REF_ANNOTATION     "org.opencontainers.image.ref.name"
#define NAME_ANNOTATION    "io.containerd.image.name"

int image_members_add(struct image_members *m, const char *path, const void *data, size_t len)
{
        if (len > IMAGE_MAX_JSON)
                return -EFBIG;
        if (m->n == m->cap) {
                size_t cap = MAX(m->cap * 2, (size_t)16);
                struct image_member *v = realloc(m->v, cap * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                m->v = v;
                m->cap = cap;
        }
        struct image_member *x = &m->v[m->n];
        x->path = strdup(path);
        x->data = malloc(len + 1);
        if (!x->path || !x->data) {
                free(x->path);
                free(x->data);
                return -ENOMEM;
        }
        memcpy(x->data, data, len);
        x->data[len] = 0;
        x->len = len;
        m->n++;
        m->total += len;
        return 0;
}

const struct image_member *image_members_find(const struct image_members *m, const char *path)
{
        /* the last one wins, as a tar extracted in order would have it */
        for (size_t i = m->n; i-- > 0;)
                if (strcmp(m->v[i].path, path) == 0)
                        return &m->v[i];
        return NULL;
}

void image_members_done(struct image_members *m)
{
        for (size_t i = 0; i < m->n; i++) {
                free(m->v[i].path);
                free(m->v[i].data);
        }
        free(m->v);
        *m = (struct image_members){};
}

void image_plan_done(struct image_plan *p)
{
        for (size_t i = 0; i < p->n_layers; i++)
                free(p->layers[i].path);
        cJSON_Delete(p->env);
        cJSON_Delete(p->entrypoint);
        cJSON_Delete(p->cmd);
        free(p->user);
        free(p->workdir);
        *p = (struct image_plan){};
}

_printf_(2, 3) static int bad(char *err, const char *fmt, ...)
{
        (void)FORMAT_VARARGS(err, IMAGE_ERR_MAX, fmt);
        return -EINVAL;
}

static const char *jstr(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
        return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool is_hex64(const char *s)
{
        return s && strspn(s, "0123456789abcdef") == 64 && s[64] == 0;
}

/* "sha256:<hex>" → hex, or NULL. */
static const char *digest_hex(const char *d)
{
        return d && strncmp(d, "sha256:", 7) == 0 && is_hex64(d + 7) ? d + 7 : NULL;
}

/* The blob of a descriptor, parsed, its bytes checked against the digest. */
static int read_blob(const struct image_members *m, const char *digest, cJSON **ret, char *err)
{
        const char *hex = digest_hex(digest);
        char path[80], got[65];
        if (!hex)
                return bad(err, "unsupported digest '%.80s' (only sha256)", digest ? digest : "");
        snprintf(path, sizeof(path), "blobs/sha256/%s", hex);
        const struct image_member *b = image_members_find(m, path);
        if (!b)
                return bad(err, "the archive has no blob %s", path);
        struct sha256 h;
        sha256_init(&h);
        sha256_update(&h, b->data, b->len);
        sha256_final_hex(&h, got);
        if (strcmp(got, hex) != 0)
                return bad(err, "blob %s does not match its digest", path);
        cJSON *j = cJSON_ParseWithLength(b->data, b->len);
        if (!cJSON_IsObject(j)) {
                cJSON_Delete(j);
                return bad(err, "blob %s is not a JSON object", path);
        }
        *ret = j;
        return 0;
}

static cJSON *parse_member(const struct image_members *m, const char *path)
{
        const struct image_member *x = image_members_find(m, path);
        return x ? cJSON_ParseWithLength(x->data, x->len) : NULL;
}

struct candidates {
        const cJSON *desc[64];
        char names[64][160];
        size_t n;
};

static bool platform_ok(const cJSON *desc, const char *arch)
{
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(desc, "platform");
        if (!cJSON_IsObject(p))
                return true;
        const char *os = jstr(p, "os"), *a = jstr(p, "architecture");
        return (!os || strcmp(os, "linux") == 0) && (!a || strcmp(a, arch) == 0);
}

/* Image manifests under index (recursing into nested indexes). */
static int collect(const struct image_members *m, const cJSON *index, const char *arch, int depth,
                   cJSON **keep, struct candidates *c, char *err)
{
        const cJSON *d, *list = cJSON_GetObjectItemCaseSensitive(index, "manifests");
        if (!cJSON_IsArray(list))
                return bad(err, "index.json has no manifests");
        cJSON_ArrayForEach(d, list)
        {
                const char *mt = jstr(d, "mediaType");
                if (mt && (strcmp(mt, MT_OCI_INDEX) == 0 || strcmp(mt, MT_DOCKER_LIST) == 0)) {
                        if (depth >= IMAGE_MAX_INDEX_DEPTH)
                                return bad(err, "image indexes nested deeper than %d",
                                           IMAGE_MAX_INDEX_DEPTH);
                        cJSON *sub = NULL;
                        int r = read_blob(m, jstr(d, "digest"), &sub, err);
                        if (r < 0)
                                return r;
                        /* kept alive: the candidates point into it */
                        cJSON_AddItemToArray(*keep, sub);
                        r = collect(m, sub, arch, depth + 1, keep, c, err);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (mt && strcmp(mt, MT_OCI_MANIFEST) != 0 && strcmp(mt, MT_DOCKER_MANIFEST) != 0)
                        continue;
                if (!platform_ok(d, arch))
                        continue;
                if (c->n == ELEMENTSOF(c->desc))
                        return bad(err, "the archive lists more than %zu images",
                                   ELEMENTSOF(c->desc));
                const cJSON *ann = cJSON_GetObjectItemCaseSensitive(d, "annotations");
                const char *name = jstr(ann, NAME_ANNOTATION), *tag = jstr(ann, REF_ANNOTATION);
                snprintf(c->names[c->n], sizeof(c->names[0]), "%s", name ? name : tag ? tag : "");
                c->desc[c->n++] = d;
        }
        return 0;
}

static bool ref_matches(const cJSON *desc, const char *ref)
{
        const cJSON *ann = cJSON_GetObjectItemCaseSensitive(desc, "annotations");
        const char *name = jstr(ann, NAME_ANNOTATION), *tag = jstr(ann, REF_ANNOTATION);
        if ((name && strcmp(name, ref) == 0) || (tag && strcmp(tag, ref) == 0))
                return true;
        /* "docker.io/library/x:1" matches "x:1" */
        size_t ln = name ? strlen(name) : 0, lr = strlen(ref);
        return ln > lr && name[ln - lr - 1] == '/' && strcmp(name + ln - lr, ref) == 0;
}

static int pick(const struct candidates *c, const char *ref, size_t *ret, char *err)
{
        if (c->n == 0)
                return bad(err, "the archive holds no image for linux");
        if (ref && *ref) {
                for (size_t i = 0; i < c->n; i++)
                        if (ref_matches(c->desc[i], ref)) {
                                *ret = i;
                                return 0;
                        }
                return bad(err, "the archive holds no image named '%.100s'", ref);
        }
        if (c->n > 1) {
                char list[300] = "";
                for (size_t i = 0; i < c->n && strlen(list) < 200; i++)
                        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s'%s'",
                                 i ? ", " : "", c->names[i]);
                return bad(err, "the archive holds %zu images (%s): name one with ref", c->n, list);
        }
        *ret = 0;
        return 0;
}

static bool layer_type_ok(const char *mt)
{
        static const char *const ok[] = {
            "application/vnd.oci.image.layer.v1.tar",
            "application/vnd.oci.image.layer.v1.tar+gzip",
            "application/vnd.oci.image.layer.v1.tar+zstd",
            "application/vnd.docker.image.rootfs.diff.tar",
            "application/vnd.docker.image.rootfs.diff.tar.gzip",
            "application/vnd.docker.image.rootfs.diff.tar.zstd",
        };
        if (!mt)
                return true;
        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                if (strcmp(mt, ok[i]) == 0)
                        return true;
        return false;
}

static cJSON *dup_array(const cJSON *o, const char *k)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k), *e;
        if (!cJSON_IsArray(v))
                return NULL;
        cJSON_ArrayForEach(e, v) if (!cJSON_IsString(e)) return NULL;
        return cJSON_Duplicate(v, 1);
}

/* The config's fields the template takes. */
static int take_config(const cJSON *config, struct image_plan *p)
{
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(config, "config");
        const char *user = jstr(c, "User"), *wd = jstr(c, "WorkingDir");
        p->env = dup_array(c, "Env");
        p->entrypoint = dup_array(c, "Entrypoint");
        p->cmd = dup_array(c, "Cmd");
        if ((user && *user && !(p->user = strdup(user))) ||
            (wd && *wd && !(p->workdir = strdup(wd))))
                return -ENOMEM;
        return 0;
}

static int add_layer(struct image_plan *p, const char *path, const char *hex, char *err)
{
        if (p->n_layers == IMAGE_MAX_LAYERS)
                return bad(err, "the image has more than %d layers", IMAGE_MAX_LAYERS);
        struct image_layer_ref *l = &p->layers[p->n_layers];
        if (!(l->path = strdup(path)))
                return -ENOMEM;
        memcpy(l->digest, hex, 65);
        p->n_layers++;
        return 0;
}

static int resolve_oci(const struct image_members *m, const char *ref, const char *arch,
                       struct image_plan *p, char *err)
{
        _cleanup_json_ cJSON *index = parse_member(m, "index.json");
        _cleanup_json_ cJSON *keep = cJSON_CreateArray();
        _cleanup_json_ cJSON *man = NULL, *config = NULL;
        struct candidates c = {};
        size_t i = 0;
        if (!cJSON_IsObject(index))
                return bad(err, "index.json is not a JSON object");
        if (!keep)
                return -ENOMEM;
        int r = collect(m, index, arch, 0, &keep, &c, err);
        if (r < 0 || (r = pick(&c, ref, &i, err)) < 0)
                return r;
        const char *mdigest = jstr(c.desc[i], "digest");
        if ((r = read_blob(m, mdigest, &man, err)) < 0)
                return r;
        snprintf(p->digest, sizeof(p->digest), "%s", mdigest);
        const cJSON *cd = cJSON_GetObjectItemCaseSensitive(man, "config"), *l;
        if ((r = read_blob(m, jstr(cd, "digest"), &config, err)) < 0)
                return r;
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(man, "layers");
        if (!cJSON_IsArray(layers))
                return bad(err, "the image manifest has no layers");
        cJSON_ArrayForEach(l, layers)
        {
                const char *mt = jstr(l, "mediaType"), *hex = digest_hex(jstr(l, "digest"));
                char path[80];
                if (!layer_type_ok(mt))
                        return bad(err, "layer of media type '%.100s' is not supported", mt);
                if (!hex)
                        return bad(err, "a layer has no sha256 digest");
                snprintf(path, sizeof(path), "blobs/sha256/%s", hex);
                if ((r = add_layer(p, path, hex, err)) < 0)
                        return r;
        }
        p->oci = true;
        return take_config(config, p);
}

static bool repotag_matches(const cJSON *entry, const char *ref)
{
        const cJSON *t, *tags = cJSON_GetObjectItemCaseSensitive(entry, "RepoTags");
        cJSON_ArrayForEach(t, tags)
        {
                if (!cJSON_IsString(t))
                        continue;
                size_t lt = strlen(t->valuestring), lr = strlen(ref);
                if (strcmp(t->valuestring, ref) == 0 ||
                    (lt > lr && t->valuestring[lt - lr - 1] == '/' &&
                     strcmp(t->valuestring + lt - lr, ref) == 0))
                        return true;
        }
        return false;
}

static int resolve_docker(const struct image_members *m, const char *ref, struct image_plan *p,
                          char *err)
{
        _cleanup_json_ cJSON *man = parse_member(m, "manifest.json");
        _cleanup_json_ cJSON *config = NULL;
        const cJSON *entry = NULL, *e;
        int n = cJSON_GetArraySize(man);
        if (!cJSON_IsArray(man) || n == 0)
                return bad(err, "manifest.json is not a list of images");
        cJSON_ArrayForEach(e, man) if (!ref || !*ref || repotag_matches(e, ref))
        {
                if (entry && (!ref || !*ref))
                        return bad(err, "the archive holds %d images: name one with ref", n);
                entry = entry ? entry : e;
        }
        if (!entry)
                return bad(err, "the archive holds no image tagged '%.100s'", ref);
        const char *cpath = jstr(entry, "Config");
        const struct image_member *cm = cpath ? image_members_find(m, cpath) : NULL;
        if (!cm)
                return bad(err, "the image's config '%.100s' is not in the archive",
                           cpath ? cpath : "");
        char hex[65];
        struct sha256 h;
        sha256_init(&h);
        sha256_update(&h, cm->data, cm->len);
        sha256_final_hex(&h, hex);
        const char *named = strncmp(cpath, "blobs/sha256/", 13) == 0                  ? cpath + 13
                            : strlen(cpath) == 69 && strcmp(cpath + 64, ".json") == 0 ? cpath
                                                                                      : NULL;
        if (named && strncmp(named, hex, 64) != 0)
                return bad(err, "the image's config %.100s does not match its digest", cpath);
        snprintf(p->digest, sizeof(p->digest), "sha256:%s", hex);
        if (!cJSON_IsObject(config = cJSON_ParseWithLength(cm->data, cm->len)))
                return bad(err, "the image's config is not a JSON object");
        const cJSON *diff = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(config, "rootfs"), "diff_ids");
        const cJSON *l, *layers = cJSON_GetObjectItemCaseSensitive(entry, "Layers");
        if (!cJSON_IsArray(layers))
                return bad(err, "the image in manifest.json has no Layers");
        int i = 0, r;
        cJSON_ArrayForEach(l, layers)
        {
                if (!cJSON_IsString(l))
                        return bad(err, "a layer path in manifest.json is not a string");
                const char *path = l->valuestring, *d;
                const cJSON *di = cJSON_GetArrayItem(diff, i);
                if (strncmp(path, "blobs/sha256/", 13) == 0 && is_hex64(path + 13))
                        d = path + 13;
                else if (!(d = digest_hex(cJSON_IsString(di) ? di->valuestring : NULL)))
                        return bad(err, "layer %d (%.100s) has no digest in the config's diff_ids",
                                   i, path);
                if ((r = add_layer(p, path, d, err)) < 0)
                        return r;
                i++;
        }
        return take_config(config, p);
}

int image_plan_resolve(const struct image_members *m, const char *ref, const char *arch,
                       struct image_plan *ret, char err[static IMAGE_ERR_MAX])
{
        struct image_plan p = {};
        int r;
        err[0] = 0;
        if (image_members_find(m, "index.json"))
                r = resolve_oci(m, ref, arch, &p, err);
        else if (image_members_find(m, "manifest.json"))
                r = resolve_docker(m, ref, &p, err);
        else
                r = bad(err, "not an image archive: no index.json (OCI layout) or manifest.json "
                             "(docker save)");
        if (r >= 0 && p.n_layers == 0)
                r = bad(err, "the image has no layers");
        if (r < 0) {
                image_plan_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}
