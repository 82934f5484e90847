/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/upper.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>

#include "core/stats.h"
#include "lifecycle/registry.h"
#include "log.h"
#include "storage/disk-pool.h"
#include "storage/layer-store.h"
#include "storage/template.h"

bool lifecycle_upper_in_pool(const struct server *srv, const struct sandbox *s)
{
        return srv->disk_pool && disk_pool_has_upper(srv->disk_pool, s->id);
}

/* A new upper is admitted while the pool has more free space than the reserve: sizes promised
 * to sandboxes no longer add up, since a full pool is an error at the writer's write(). */
static int admit(struct server *srv, char *errmsg, size_t errlen)
{
        struct disk_pool_space sp;
        int r = disk_pool_space(srv->disk_pool, &sp);
        if (r < 0)
                return r;
        uint64_t reserve = srv->config->disk_reserve_mb << 20;
        if (sp.free > reserve)
                return 0;
        stats_count_disk_refused();
        snprintf(errmsg, errlen,
                 "not enough space in the storage pool for a sandbox: %llu MiB free, %llu MiB "
                 "kept in reserve (sbx storage grow SIZE adds space)",
                 (unsigned long long)(sp.free >> 20), (unsigned long long)(reserve >> 20));
        log_warning("%s", errmsg);
        return -ENOSPC;
}

int lifecycle_upper_make(struct server *srv, struct sandbox *s, char *errmsg, size_t errlen)
{
        if (disk_pool_has_upper(srv->disk_pool, s->id))
                return 0; /* resuming a persisted sandbox: its files are there */
        int r = admit(srv, errmsg, errlen);
        if (r < 0)
                return r;
        r = disk_pool_upper_create(srv->disk_pool, s->id, (uint64_t)s->disk_mb << 20,
                                   s->upper_seed);
        if (r == -ENOENT && s->upper_seed)
                snprintf(errmsg, errlen,
                         "sandbox start failed at its disk: the snapshot's "
                         "files are gone from the storage pool");
        else if (r == -ENOSPC || r == -EDQUOT)
                snprintf(errmsg, errlen, "not enough space in the storage pool for a sandbox");
        return r == -EDQUOT ? -ENOSPC : r;
}

int lifecycle_upper_dir(const struct server *srv, const struct sandbox *s, char *buf, size_t len,
                        uid_t *ret_base)
{
        int r;
        if (lifecycle_upper_in_pool(srv, s)) {
                char sub[4096];
                if ((r = disk_pool_upper_path(srv->disk_pool, s->id, sub, sizeof(sub))) < 0)
                        return r;
                *ret_base = 0;
                r = snprintf(buf, len, "%s/upper", sub);
        } else {
                if (!s->dir)
                        return -ENODEV;
                *ret_base = registry_uid_base(s->slot);
                r = snprintf(buf, len, "%s/rootfs/upper", s->dir);
        }
        return r < 0 || (size_t)r >= len ? -ENAMETOOLONG : 0;
}

int lifecycle_upper_ingest(struct server *srv, const struct sandbox *s, char *ret_hex)
{
        char upper[4096];
        uid_t base;
        int r = lifecycle_upper_dir(srv, s, upper, sizeof(upper), &base);
        if (r < 0)
                return r;
        return layer_store_ingest_upper(srv->config->state_dir, upper, base, UID_SLOT_SIZE,
                                        ret_hex);
}

/* The snapshot names templates use as their "upper" (NULL-terminated, owned), read once. */
static char **used_snapshots(const char *state)
{
        char base[4096];
        snprintf(base, sizeof(base), "%s/templates", state);
        DIR *d = opendir(base);
        char **v = calloc(1, sizeof(*v));
        size_t n = 0;
        for (struct dirent *de; d && v && (de = readdir(d));) {
                struct template_info t = {};
                if (de->d_name[0] == '.' || !template_name_valid(de->d_name) ||
                    template_load(state, de->d_name, &t) < 0)
                        continue;
                const char *slash = t.upper_seed ? strrchr(t.upper_seed, '/') : NULL;
                char **nv = slash ? realloc(v, (n + 2) * sizeof(*v)) : v;
                if (nv && slash && (nv[n] = strdup(slash + 1)))
                        nv[++n] = NULL;
                v = nv;
                template_done(&t);
        }
        if (d)
                closedir(d);
        return v;
}

static bool listed(char *const *v, const char *name)
{
        for (size_t i = 0; v && v[i]; i++)
                if (strcmp(v[i], name) == 0)
                        return true;
        return false;
}

static void free_names(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

int lifecycle_upper_gc(struct server *srv)
{
        const char *state = srv->config->state_dir;
        char **v = NULL, path[4096];
        int n = 0;
        if (!srv->disk_pool)
                return 0;
        if (disk_pool_list(srv->disk_pool, false, &v) >= 0)
                for (size_t i = 0; v[i]; i++) {
                        struct stat st;
                        snprintf(path, sizeof(path), "%s/sandboxes/%s", state, v[i]);
                        if (stat(path, &st) == 0 || errno != ENOENT)
                                continue;
                        if (disk_pool_upper_remove(srv->disk_pool, v[i]) >= 0)
                                n++;
                }
        free_names(v);
        v = NULL;
        char **used = used_snapshots(state);
        if (used && disk_pool_list(srv->disk_pool, true, &v) >= 0)
                for (size_t i = 0; v[i]; i++)
                        if (!listed(used, v[i]) &&
                            disk_pool_snapshot_remove(srv->disk_pool, v[i]) >= 0)
                                n++;
        free_names(v);
        free_names(used);
        return n;
}
