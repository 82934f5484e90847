/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/template.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "core/validate.h"
#include "fd-util.h"
#include "storage/layer-store.h"
#include "storage/disk-pool.h"
#include "macros.h"

void template_done(struct template_info *t)
{
        free(t->dir);
        cJSON_Delete(t->layers);
        cJSON_Delete(t->binds);
        cJSON_Delete(t->env);
        free(t->default_user);
        free(t->default_workdir);
        free(t->start_cmd);
        free(t->ready_cmd);
        free(t->upper_seed);
        *t = (struct template_info){};
}

static unsigned get_uint(const cJSON *o, const char *name, unsigned def, unsigned max)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
        if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > max)
                return def;
        return (unsigned)v->valuedouble;
}

static char *get_str(const cJSON *o, const char *name, const char *def)
{
        const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, name) : NULL;
        return strdup(cJSON_IsString(v) && v->valuestring[0] ? v->valuestring : def);
}

/* "sha256:<64 hex>": a layer of the store (storage/layer-store.h), <state>/layers/<hex>. */
static bool store_ref(const char *v, const char *state, char *path, size_t size)
{
        static const char pre[] = "sha256:";
        if (strncmp(v, pre, sizeof(pre) - 1) != 0)
                return false;
        v += sizeof(pre) - 1;
        if (strspn(v, "0123456789abcdef") != 64 || v[64])
                return false;
        snprintf(path, size, "%s/layers/%s", state, v);
        return true;
}

/* A relative layer name inside the template dir (no '/'-leading, no ".."), or a store layer. */
static int resolve_layers(const cJSON *j, const char *dir, const char *state, cJSON **ret)
{
        const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers"), *l;
        if (!cJSON_IsArray(layers) || cJSON_GetArraySize(layers) < 1 ||
            cJSON_GetArraySize(layers) > TEMPLATE_MAX_LAYERS)
                return -EINVAL;
        cJSON *out = cJSON_CreateArray();
        if (!out)
                return -ENOMEM;
        cJSON_ArrayForEach(l, layers)
        {
                char path[4096];
                if (cJSON_IsString(l) && store_ref(l->valuestring, state, path, sizeof(path))) {
                        cJSON_AddItemToArray(out, cJSON_CreateString(path));
                        continue;
                }
                if (!cJSON_IsString(l) || !l->valuestring[0] || l->valuestring[0] == '/' ||
                    strstr(l->valuestring, "..") ||
                    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, l->valuestring) >=
                        sizeof(path)) {
                        cJSON_Delete(out);
                        return -EINVAL;
                }
                cJSON_AddItemToArray(out, cJSON_CreateString(path));
        }
        *ret = out;
        return 0;
}

static int copy_binds(const cJSON *j, cJSON **ret)
{
        const cJSON *binds = cJSON_GetObjectItemCaseSensitive(j, "binds"), *b;
        cJSON *out = cJSON_CreateArray();
        if (!out)
                return -ENOMEM;
        if (binds && !cJSON_IsArray(binds))
                goto bad;
        if (cJSON_GetArraySize(binds) > TEMPLATE_MAX_BINDS)
                goto bad;
        cJSON_ArrayForEach(b, binds)
        {
                const cJSON *src = cJSON_GetObjectItemCaseSensitive(b, "source");
                const cJSON *dst = cJSON_GetObjectItemCaseSensitive(b, "target");
                const cJSON *ro = cJSON_GetObjectItemCaseSensitive(b, "readonly");
                if (!cJSON_IsString(src) || !cJSON_IsString(dst) || src->valuestring[0] != '/' ||
                    dst->valuestring[0] != '/' || strstr(dst->valuestring, ".."))
                        goto bad;
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "source", src->valuestring);
                cJSON_AddStringToObject(o, "target", dst->valuestring);
                /* read-only unless the template says otherwise */
                cJSON_AddBoolToObject(o, "readonly", !cJSON_IsFalse(ro));
                cJSON_AddItemToArray(out, o);
        }
        *ret = out;
        return 0;
bad:
        cJSON_Delete(out);
        return -EINVAL;
}

bool templates_building(const char *state_dir)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/templates/" TEMPLATE_BUILDING_LOCK, state_dir);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return false;
        if (flock(fd, LOCK_SH | LOCK_NB) < 0)
                return errno == EWOULDBLOCK;
        (void)flock(fd, LOCK_UN);
        return false;
}

int template_load(const char *state_dir, const char *name, struct template_info *ret)
{
        struct template_info t = {};
        char path[4096];
        int r;

        if (asprintf(&t.dir, "%s/templates/%s", state_dir, name) < 0)
                return -ENOMEM;
        if ((size_t)snprintf(path, sizeof(path), "%s/template.json", t.dir) >= sizeof(path)) {
                template_done(&t);
                return -ENAMETOOLONG;
        }
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
                r = errno == ENOENT || errno == ENOTDIR ? -ENOENT : -errno;
                template_done(&t);
                return r;
        }
        _cleanup_free_ char *buf = NULL;
        size_t len;
        r = read_all(fd, 1024 * 1024, &buf, &len);
        if (r < 0) {
                template_done(&t);
                return r;
        }
        cJSON *j = cJSON_ParseWithLength(buf, len);
        if (!cJSON_IsObject(j))
                r = -EINVAL;
        if (r >= 0)
                r = resolve_layers(j, t.dir, state_dir, &t.layers);
        if (r >= 0)
                r = copy_binds(j, &t.binds);
        const cJSON *up = cJSON_GetObjectItemCaseSensitive(j, "upper");
        if (r >= 0 && up &&
            (!cJSON_IsString(up) || !template_name_valid(up->valuestring) ||
             asprintf(&t.upper_seed, "%s/" DISK_POOL_DIR "/" DISK_POOL_SNAPSHOTS "/%s", state_dir,
                      up->valuestring) < 0))
                r = cJSON_IsString(up) && template_name_valid(up->valuestring) ? -ENOMEM : -EINVAL;
        if (r >= 0) {
                const cJSON *env = cJSON_GetObjectItemCaseSensitive(j, "env");
                if (cJSON_IsObject(env))
                        t.env = cJSON_Duplicate(env, 1);
                const cJSON *envd = cJSON_GetObjectItemCaseSensitive(j, "envd");
                t.cpu_count = get_uint(j, "cpuCount", TEMPLATE_DEFAULT_CPU, 64);
                t.memory_mb = get_uint(j, "memoryMB", TEMPLATE_DEFAULT_MEMORY_MB, 1024 * 1024);
                t.disk_mb = get_uint(j, "diskSizeMB", TEMPLATE_DEFAULT_DISK_MB, 1024 * 1024);
                t.default_user = get_str(envd, "defaultUser", "user");
                t.default_workdir = get_str(envd, "defaultWorkdir", "/home/user");
                if (!t.default_user || !t.default_workdir)
                        r = -ENOMEM;
                const cJSON *sc = cJSON_GetObjectItemCaseSensitive(j, "startCmd");
                const cJSON *rc = cJSON_GetObjectItemCaseSensitive(j, "readyCmd");
                if (r >= 0 && cJSON_IsString(sc) && sc->valuestring[0] &&
                    !(t.start_cmd = strdup(sc->valuestring)))
                        r = -ENOMEM;
                if (r >= 0 && cJSON_IsString(rc) && rc->valuestring[0] &&
                    !(t.ready_cmd = strdup(rc->valuestring)))
                        r = -ENOMEM;
        }
        cJSON_Delete(j);
        if (r < 0) {
                template_done(&t);
                return r;
        }
        *ret = t;
        return 0;
}

int template_store_refs(const char *state_dir, const struct template_info *t, cJSON **ret)
{
        char hex[LAYER_ID_MAX], upper[4096 + 8];
        cJSON *refs = cJSON_CreateArray();
        int r = refs ? layer_store_refs(state_dir, t->layers, refs) : -ENOMEM;
        if (r >= 0 && t->upper_seed) {
                /* its files hold the sandbox's own ids (storage/disk-pool.h): no shift */
                snprintf(upper, sizeof(upper), "%s/upper", t->upper_seed);
                r = layer_store_ingest_upper(state_dir, upper, 0, 65536, hex);
                if (r >= 0) {
                        layer_store_ref_add(refs, hex);
                        layer_store_hold(hex); /* named by no record here */
                }
        }
        if (r < 0) {
                cJSON_Delete(refs);
                return r;
        }
        *ret = refs;
        return 0;
}
