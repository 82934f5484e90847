/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup-freeze.h"
#include "fd-util.h"
#include "storage/json-record.h"
#include "storage/layer-store.h"
#include "lifecycle/lifecycle.h"
#include "lifecycle/upper.h"
#include "storage/disk-pool.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"
#include "core/stats.h"
#include "lifecycle/teardown.h"
#include "storage/template.h"

#define FREEZE_TIMEOUT_MS 2000

static cJSON *read_template(struct server *srv, const char *name)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/templates/%s/template.json", srv->config->state_dir, name);
        return json_file_read(path, 1024 * 1024);
}

/* The sandbox's upper, frozen meanwhile unless already paused: a read-only snapshot of its
 * pool subvolume named id (*ret_in_pool; O(1), nothing copied), else a store layer (ret_hex;
 * "" for a persisted sandbox of the image fallback: its layers hold everything). Under the
 * store read lock. */
static int capture_upper(struct server *srv, struct sandbox *s, const char *id, char *ret_hex,
                         bool *ret_in_pool)
{
        char cg[96], path[4096];
        int r = 0;
        ret_hex[0] = 0;
        snprintf(cg, sizeof(cg), "%s/%s", CGROUP_PARENT, s->id);
        pthread_mutex_lock(&s->op_lock);
        bool was_paused = sandbox_is_paused(s);
        *ret_in_pool = lifecycle_upper_in_pool(srv, s);
        if (*ret_in_pool || !s->persisted) {
                bool freeze = !was_paused && !s->persisted;
                if (freeze)
                        r = cgroup_freeze(cg, true, FREEZE_TIMEOUT_MS);
                if (r >= 0 && *ret_in_pool)
                        r = disk_pool_snapshot(srv->disk_pool, s->id, id, path, sizeof(path));
                else if (r >= 0)
                        r = lifecycle_upper_ingest(srv, s, ret_hex);
                if (freeze)
                        cgroup_freeze(cg, false, FREEZE_TIMEOUT_MS);
        }
        pthread_mutex_unlock(&s->op_lock);
        return r;
}

/* s's layers as "sha256:<hex>" refs (template layers imported), plus top when set. */
static int layer_refs(struct server *srv, const struct sandbox *s, const char *top, cJSON **ret)
{
        cJSON *out = cJSON_CreateArray();
        int r = out ? layer_store_refs(srv->config->state_dir, s->layers, out) : -ENOMEM;
        if (r < 0) {
                cJSON_Delete(out);
                return r;
        }
        if (top && *top)
                layer_store_ref_add(out, top);
        *ret = out;
        return 0;
}

static cJSON *snapshot_json(struct server *srv, const struct sandbox *s, const char *id,
                            const char *name, bool hidden, cJSON *layers, bool in_pool)
{
        cJSON *o = cJSON_CreateObject(), *src = read_template(srv, s->template_id);
        if (!o) {
                cJSON_Delete(src);
                return NULL;
        }
        cJSON_AddStringToObject(o, "name", id);
        cJSON_AddTrueToObject(o, "snapshot");
        cJSON_AddStringToObject(o, "snapshotID", id);
        cJSON *names = cJSON_AddArrayToObject(o, "names");
        if (name && names)
                cJSON_AddItemToArray(names, cJSON_CreateString(name));
        cJSON_AddBoolToObject(o, "hidden", hidden);
        cJSON_AddStringToObject(o, "sandboxID", s->id);
        cJSON_AddStringToObject(o, "fromTemplate", s->template_id);
        cJSON_AddNumberToObject(o, "createdAtUnix", (double)time(NULL));
        cJSON_AddItemToObject(o, "layers", layers);
        if (in_pool) /* the upper every sandbox of it starts from (storage/template.h) */
                cJSON_AddStringToObject(o, "upper", id);
        cJSON_AddItemToObject(o, "binds",
                              s->binds ? cJSON_Duplicate(s->binds, 1) : cJSON_CreateArray());
        cJSON_AddNumberToObject(o, "cpuCount", s->cpu_count);
        cJSON_AddNumberToObject(o, "memoryMB", s->memory_mb);
        cJSON_AddNumberToObject(o, "diskSizeMB", s->disk_mb);
        /* the template's agent environment and envd defaults; never the sandbox's envVars */
        static const char *const keep[] = {"env", "envd"};
        for (size_t i = 0; i < ELEMENTSOF(keep); i++) {
                cJSON *v = cJSON_GetObjectItemCaseSensitive(src, keep[i]);
                if (cJSON_IsObject(v))
                        cJSON_AddItemToObject(o, keep[i], cJSON_Duplicate(v, 1));
        }
        cJSON_Delete(src);
        return o;
}

/* templates/<dir>/template.json, atomically (a temp dir renamed into place). */
static int write_template(struct server *srv, const char *dir, const cJSON *j)
{
        char tmp[4096], path[4096 + 32], final[4096], rnd[17];
        int r = random_hex(rnd, 8);
        if (r < 0)
                return r;
        snprintf(tmp, sizeof(tmp), "%s/templates/.snap-%s", srv->config->state_dir, rnd);
        snprintf(final, sizeof(final), "%s/templates/%s", srv->config->state_dir, dir);
        if (mkdir(tmp, 0755) < 0)
                return -errno;
        _cleanup_free_ char *text = cJSON_Print(j);
        snprintf(path, sizeof(path), "%s/template.json", tmp);
        _cleanup_close_ int fd =
            text ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644) : -1;
        r = !text ? -ENOMEM : fd < 0 ? -errno : write_full(fd, text, strlen(text));
        if (r >= 0 && rename(tmp, final) < 0)
                r = errno == ENOTEMPTY ? -EEXIST : -errno;
        if (r < 0)
                rm_rf(tmp);
        return r;
}

int snapshot_create(struct server *srv, struct sandbox *s, const char *name, bool hidden,
                    char *ret_id, char *errmsg, size_t errlen)
{
        char id[SNAPSHOT_ID_MAX], rnd[21], hex[LAYER_ID_MAX];
        if (name && (!template_name_valid(name) || strlen(name) > 48)) {
                snprintf(errmsg, errlen, "invalid snapshot name");
                return -EINVAL;
        }
        cJSON *existing = name ? read_template(srv, name) : NULL;
        if (existing) {
                cJSON_Delete(existing);
                snprintf(errmsg, errlen, "a template named '%s' exists already", name);
                return -EEXIST;
        }
        int r = random_hex(rnd, 10);
        if (r < 0)
                return r;
        snprintf(id, sizeof(id), "snap-%s", rnd);
        bool in_pool = false;
        layer_store_read_lock();
        r = capture_upper(srv, s, id, hex, &in_pool);
        bool snapped = r >= 0 && in_pool;
        cJSON *layers = NULL, *j = NULL;
        if (r >= 0)
                r = layer_refs(srv, s, hex, &layers);
        if (r >= 0 && !(j = snapshot_json(srv, s, id, name, hidden, layers, in_pool))) {
                cJSON_Delete(layers);
                r = -ENOMEM;
        }
        if (r >= 0)
                r = write_template(srv, id, j);
        if (r >= 0 && name) {
                r = write_template(srv, name, j);
                if (r < 0) {
                        char dir[4096];
                        snprintf(dir, sizeof(dir), "%s/templates/%s", srv->config->state_dir, id);
                        rm_rf(dir);
                }
        }
        layer_store_unlock();
        cJSON_Delete(j);
        if (r < 0 && snapped)
                (void)disk_pool_snapshot_remove(srv->disk_pool, id);
        if (r < 0) {
                snprintf(errmsg, errlen, "%s",
                         r == -ENODEV   ? "this sandbox was started without a host-visible upper "
                                          "(older sbxd): it cannot be snapshotted"
                         : r == -EEXIST ? "snapshot name taken"
                                        : "snapshot failed");
                if (r != -EEXIST)
                        log_error_errno(r, "sandbox %s: snapshot: %m", s->id);
                return r == -ENODEV ? -EINVAL : r;
        }
        stats_count_snapshot();
        log_info("sandbox %s: snapshot %s%s%s", s->id, id, name ? " named " : "", name ? name : "");
        memcpy(ret_id, id, SNAPSHOT_ID_MAX);
        return 0;
}

struct snap_item {
        int64_t created; /* createdAtUnix: whole seconds */
        char id[SNAPSHOT_ID_MAX];
        cJSON *names;
};

static int cmp_items(const void *a, const void *b)
{
        const struct snap_item *x = a, *y = b;
        if (x->created != y->created)
                return x->created < y->created ? -1 : 1;
        return strcmp(x->id, y->id);
}

static bool has_name(const cJSON *names, const char *name)
{
        const cJSON *n;
        cJSON_ArrayForEach(n, names) if (cJSON_IsString(n) &&
                                         strcmp(n->valuestring, name) == 0) return true;
        return false;
}

/* Visible snapshots (their id dirs only, not the name aliases), filtered. */
static int collect(struct server *srv, const char *sandbox_id, const char *name,
                   struct snap_item **ret, size_t *ret_n)
{
        char base[4096];
        snprintf(base, sizeof(base), "%s/templates", srv->config->state_dir);
        DIR *d = opendir(base);
        if (!d)
                return -errno;
        struct snap_item *v = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.' || strncmp(de->d_name, "snap-", 5) != 0 ||
                    strlen(de->d_name) >= SNAPSHOT_ID_MAX)
                        continue;
                cJSON *j = read_template(srv, de->d_name);
                const cJSON *sid = cJSON_GetObjectItemCaseSensitive(j, "snapshotID");
                const cJSON *sbx = cJSON_GetObjectItemCaseSensitive(j, "sandboxID");
                const cJSON *names = cJSON_GetObjectItemCaseSensitive(j, "names");
                bool ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "snapshot")) &&
                          !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "hidden")) &&
                          cJSON_IsString(sid) && strcmp(sid->valuestring, de->d_name) == 0 &&
                          (!sandbox_id ||
                           (cJSON_IsString(sbx) && strcmp(sbx->valuestring, sandbox_id) == 0)) &&
                          (!name || has_name(names, name) || strcmp(name, de->d_name) == 0);
                if (ok && n == cap) {
                        cap = MAX(cap * 2, (size_t)16);
                        struct snap_item *nv = realloc(v, cap * sizeof(*v));
                        ok = nv != NULL;
                        if (nv)
                                v = nv;
                }
                if (ok) {
                        double c = cJSON_GetNumberValue(
                            cJSON_GetObjectItemCaseSensitive(j, "createdAtUnix"));
                        v[n].created = c >= 0 && c < 1e15 ? (int64_t)c : 0;
                        snprintf(v[n].id, sizeof(v[n].id), "%s", de->d_name);
                        v[n].names =
                            cJSON_IsArray(names) ? cJSON_Duplicate(names, 1) : cJSON_CreateArray();
                        n++;
                }
                cJSON_Delete(j);
        }
        closedir(d);
        if (n)
                qsort(v, n, sizeof(*v), cmp_items);
        *ret = v;
        *ret_n = n;
        return 0;
}

int snapshot_list(struct server *srv, const char *sandbox_id, const char *name, const char *after,
                  size_t limit, cJSON **ret, char ret_next[static 64])
{
        long long after_created = -1;
        const char *after_id = "";
        ret_next[0] = 0;
        if (after && *after) {
                char *end;
                errno = 0;
                after_created = strtoll(after, &end, 10);
                if (end == after || *end != '.' || errno || after_created < 0 ||
                    !template_name_valid(end + 1))
                        return -EINVAL;
                after_id = end + 1;
        }
        struct snap_item *v = NULL;
        size_t n = 0, taken = 0;
        int r = collect(srv, sandbox_id, name, &v, &n);
        if (r < 0)
                return r;
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++) {
                bool past = v[i].created > after_created ||
                            (v[i].created == after_created && strcmp(v[i].id, after_id) > 0);
                if (arr && past && taken < limit) {
                        cJSON *o = cJSON_CreateObject();
                        cJSON_AddStringToObject(o, "snapshotID", v[i].id);
                        cJSON_AddItemToObject(o, "names", v[i].names);
                        cJSON_AddItemToArray(arr, o);
                        if (++taken == limit && i + 1 < n)
                                snprintf(ret_next, 64, "%lld.%s", (long long)v[i].created, v[i].id);
                } else {
                        cJSON_Delete(v[i].names);
                }
        }
        free(v);
        if (!arr)
                return -ENOMEM;
        *ret = arr;
        return 0;
}

static void remove_template_dir(struct server *srv, const char *name)
{
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/templates/%s", srv->config->state_dir, name);
        int r = rm_rf(dir);
        if (r < 0)
                log_warning_errno(r, "removing template %s: %m", name);
}

int snapshot_delete(struct server *srv, const char *id)
{
        cJSON *j = read_template(srv, id);
        if (!j)
                return -ENOENT;
        const cJSON *sid = cJSON_GetObjectItemCaseSensitive(j, "snapshotID");
        if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "snapshot")) ||
            !cJSON_IsString(sid) || !template_name_valid(sid->valuestring)) {
                cJSON_Delete(j);
                return -EPERM;
        }
        const cJSON *n, *names = cJSON_GetObjectItemCaseSensitive(j, "names");
        cJSON_ArrayForEach(n, names)
        {
                if (!cJSON_IsString(n) || !template_name_valid(n->valuestring))
                        continue;
                /* an alias is removed only while it still names this snapshot */
                cJSON *a = read_template(srv, n->valuestring);
                const cJSON *asid = cJSON_GetObjectItemCaseSensitive(a, "snapshotID");
                if (cJSON_IsString(asid) && strcmp(asid->valuestring, sid->valuestring) == 0)
                        remove_template_dir(srv, n->valuestring);
                cJSON_Delete(a);
        }
        remove_template_dir(srv, sid->valuestring);
        /* its pool subvolume: sandboxes made from it have snapshots of their own */
        const cJSON *up = cJSON_GetObjectItemCaseSensitive(j, "upper");
        if (cJSON_IsString(up) && srv->disk_pool) {
                int u = disk_pool_snapshot_remove(srv->disk_pool, up->valuestring);
                if (u < 0)
                        log_warning_errno(u, "snapshot %s: removing its subvolume: %m",
                                          sid->valuestring);
        }
        log_info("snapshot %s: deleted", sid->valuestring);
        cJSON_Delete(j);
        int r = layer_store_gc(srv->config->state_dir, 0);
        if (r > 0)
                log_info("layer store: %d unreferenced layer(s) removed", r);
        return 0;
}

static cJSON *fork_error(int r, const char *msg)
{
        cJSON *o = cJSON_CreateObject();
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        cJSON_AddNumberToObject(e, "code", r == -EDQUOT ? 429 : r == -ENOENT ? 404 : 500);
        cJSON_AddStringToObject(e, "message", msg);
        return o;
}

int snapshot_fork(struct server *srv, struct sandbox *s, unsigned count, int64_t timeout_s,
                  cJSON **ret, char *errmsg, size_t errlen)
{
        char id[SNAPSHOT_ID_MAX];
        int r = snapshot_create(srv, s, NULL, true, id, errmsg, errlen);
        if (r < 0)
                return r;
        cJSON *arr = cJSON_CreateArray();
        struct create_params p = {.timeout_s = timeout_s};
        snprintf(p.template_id, sizeof(p.template_id), "%s", id);
        p.metadata = s->metadata;
        p.env_vars = s->env_vars;
        /* a fork of a private sandbox is private too, with a token of its own */
        p.private_traffic = s->traffic_token[0] != 0;
        snprintf(p.mask_host, sizeof(p.mask_host), "%s", s->mask_host);
        p.volume_mounts = s->volume_mounts; /* the forks mount the parent's volumes (E2B's too) */
        /* a fork gets its parent's egress, no more (none when the parent had no link) */
        if (sandbox_get_net(s, &p.net) < 0) {
                cJSON_Delete(arr);
                snapshot_delete(srv, id);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < count && arr; i++) {
                char err[512];
                struct sandbox *c = NULL;
                r = lifecycle_create(srv, &p, &c, err, sizeof(err));
                if (r < 0) {
                        cJSON_AddItemToArray(arr, fork_error(r, err));
                        continue;
                }
                /* listed under the parent's template; it runs on the snapshot's layers */
                snprintf(c->template_id, sizeof(c->template_id), "%s", s->template_id);
                sandbox_save(c);
                cJSON *o = cJSON_CreateObject();
                cJSON_AddItemToObject(o, "sandbox", sandbox_to_json(c, SHAPE_SANDBOX));
                cJSON_AddItemToArray(arr, o);
                sandbox_unref(c);
        }
        net_policy_done(&p.net);
        /* the forks' records reference the layers; the hidden template can go */
        snapshot_delete(srv, id);
        if (!arr)
                return -ENOMEM;
        *ret = arr;
        return 0;
}
