/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/sampler.h"
#include "lifecycle/lifecycle-state.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>

#include "cgroup-freeze.h"
#include "storage/layer-store.h"
#include "storage/volume.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "storage/disk-pool.h"
#include "macros.h"
#include "core/stats.h"
#include "lifecycle/teardown.h"
#include "lifecycle/tombstone.h"
#include "time-util.h"

struct sample {
        int64_t ts;
        double cpu_pct;
        uint64_t mem_used, mem_cache, mem_total, disk_used, disk_total;
};

struct sandbox_metrics {
        pthread_mutex_t lock;
        struct sample ring[SAMPLE_RING];
        size_t head, n;
        uint64_t last_cpu_ns, last_oom;
        int64_t last_us;
};

static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER;

static struct sandbox_metrics *metrics_of(struct sandbox *s)
{
        pthread_mutex_lock(&create_lock);
        if (!s->metrics) {
                s->metrics = calloc(1, sizeof(*s->metrics));
                if (s->metrics)
                        pthread_mutex_init(&s->metrics->lock, NULL);
        }
        pthread_mutex_unlock(&create_lock);
        return s->metrics;
}

/* A pool sandbox's disk is its qgroup: referenced bytes (shared extents included, as its limit
 * counts them) of its limit, as of the pool's last commit (at most 30 s old). Any other disk is
 * the file system mounted at <dir>/rootfs. */
static void disk_usage(const struct server *srv, const struct sandbox *s, uint64_t *used,
                       uint64_t *total)
{
        char path[4096];
        struct statvfs v;
        struct disk_pool_use u;
        *used = 0;
        *total = (uint64_t)s->disk_mb * 1024 * 1024;
        if (srv && srv->disk_pool && disk_pool_upper_usage(srv->disk_pool, s->id, &u) >= 0) {
                *used = u.referenced;
                if (u.limit)
                        *total = u.limit;
                return;
        }
        snprintf(path, sizeof(path), "%s/rootfs", s->dir);
        if (!s->persisted && statvfs(path, &v) == 0 && v.f_blocks > 0) {
                *used = (uint64_t)(v.f_blocks - v.f_bfree) * v.f_frsize;
                *total = (uint64_t)v.f_blocks * v.f_frsize;
        }
}

void sampler_sample(const struct server *srv, struct sandbox *s)
{
        struct sandbox_metrics *m = metrics_of(s);
        if (!m || !s->dir)
                return;
        char cg[96];
        struct cgroup_stats st = {};
        snprintf(cg, sizeof(cg), "%s/%s", CGROUP_PARENT, s->id);
        if (!s->persisted && cgroup_read_stats(cg, &st) < 0)
                return;
        int64_t t_us = now_us();
        struct sample x = {.ts = (int64_t)time(NULL)};
        pthread_mutex_lock(&m->lock);
        if (m->last_us && t_us > m->last_us && st.cpu_usage_ns >= m->last_cpu_ns) {
                double busy = (double)(st.cpu_usage_ns - m->last_cpu_ns) / 1e3;
                x.cpu_pct = 100.0 * busy / (double)(t_us - m->last_us) / MAX(s->cpu_count, 1u);
        }
        if (st.oom_kills > m->last_oom) {
                log_warning("sandbox %s: %llu process(es) killed by the OOM killer", s->id,
                            (unsigned long long)(st.oom_kills - m->last_oom));
                for (uint64_t i = m->last_oom; i < st.oom_kills; i++)
                        stats_count_oom();
        }
        m->last_oom = MAX(m->last_oom, st.oom_kills);
        m->last_cpu_ns = st.cpu_usage_ns;
        m->last_us = t_us;
        x.mem_cache = st.mem_cache;
        x.mem_used = st.mem_usage > st.mem_cache ? st.mem_usage - st.mem_cache : st.mem_usage;
        x.mem_total = (uint64_t)s->memory_mb * 1024 * 1024;
        disk_usage(srv, s, &x.disk_used, &x.disk_total);
        m->ring[m->head] = x;
        m->head = (m->head + 1) % SAMPLE_RING;
        m->n = MIN(m->n + 1, (size_t)SAMPLE_RING);
        pthread_mutex_unlock(&m->lock);
}

cJSON *sampler_metrics_json(struct sandbox *s, int64_t start, int64_t end)
{
        struct sandbox_metrics *m = metrics_of(s);
        cJSON *arr = cJSON_CreateArray();
        if (!m || !arr)
                return arr;
        pthread_mutex_lock(&m->lock);
        for (size_t i = 0; i < m->n; i++) {
                const struct sample *x = &m->ring[(m->head + SAMPLE_RING - m->n + i) % SAMPLE_RING];
                if ((start && x->ts < start) || (end && x->ts > end))
                        continue;
                cJSON *o = cJSON_CreateObject();
                char ts[32];
                if (rfc3339_format(x->ts, ts) >= 0)
                        cJSON_AddStringToObject(o, "timestamp", ts);
                cJSON_AddNumberToObject(o, "timestampUnix", (double)x->ts);
                cJSON_AddNumberToObject(o, "cpuCount", s->cpu_count);
                cJSON_AddNumberToObject(o, "cpuUsedPct", (double)(int)(x->cpu_pct * 100) / 100);
                cJSON_AddNumberToObject(o, "memUsed", (double)x->mem_used);
                cJSON_AddNumberToObject(o, "memTotal", (double)x->mem_total);
                cJSON_AddNumberToObject(o, "memCache", (double)x->mem_cache);
                cJSON_AddNumberToObject(o, "diskUsed", (double)x->disk_used);
                cJSON_AddNumberToObject(o, "diskTotal", (double)x->disk_total);
                cJSON_AddItemToArray(arr, o);
        }
        pthread_mutex_unlock(&m->lock);
        return arr;
}

/* ---- the thread ---- */

/* Memory is short when MemAvailable is under a tenth of MemTotal: paused sandboxes then go to
 * disk whatever --persist-paused-after says (when it is set at all). */
static bool memory_short(void)
{
        char buf[4096];
        FILE *f = fopen("/proc/meminfo", "re");
        unsigned long long total = 0, avail = 0;
        if (!f)
                return false;
        while (fgets(buf, sizeof(buf), f)) {
                sscanf(buf, "MemTotal: %llu kB", &total);
                sscanf(buf, "MemAvailable: %llu kB", &avail);
        }
        fclose(f);
        return total && avail < total / 10;
}

void sampler_persist_paused(struct server *srv, bool all)
{
        struct sandbox **v = NULL;
        size_t n = 0;
        if (registry_list(srv->registry, &v, &n) < 0)
                return;
        int64_t now = (int64_t)time(NULL);
        unsigned after = srv->config->persist_paused_after_s;
        bool short_mem = !all && after && memory_short();
        for (size_t i = 0; i < n; i++) {
                struct sandbox *s = v[i];
                if (after && sandbox_is_paused(s) && !s->persisted && s->paused_at &&
                    (all || short_mem || now - s->paused_at >= (int64_t)after)) {
                        int r = lifecycle_persist(srv, s);
                        if (r < 0)
                                log_warning_errno(r, "sandbox %s: persisting to disk: %m", s->id);
                }
                sandbox_unref(s);
        }
        free(v);
}

/* --delete-paused-after: a sandbox paused that long goes, as if killed (its tombstone says
 * why). serial: the one paused then, not a new sandbox that took the id. */
static void delete_expired_paused(struct server *srv)
{
        unsigned after = srv->config->delete_paused_after_s;
        struct sandbox **v = NULL;
        size_t n = 0;
        if (!after || registry_list(srv->registry, &v, &n) < 0)
                return;
        int64_t now = (int64_t)time(NULL);
        for (size_t i = 0; i < n; i++) {
                struct sandbox *s = v[i];
                if (sandbox_is_paused(s) && s->paused_at && now - s->paused_at >= (int64_t)after) {
                        struct sandbox *gone = registry_take_serial(srv->registry, s->serial);
                        if (gone) {
                                log_info("sandbox %s: paused for %llds (--delete-paused-after "
                                         "%u): removing it",
                                         gone->id, (long long)(now - gone->paused_at), after);
                                tombstone_add(gone->id, "was paused for longer than the server "
                                                        "keeps paused sandboxes");
                                lifecycle_destroy(srv, gone, "paused retention");
                        }
                }
                sandbox_unref(s);
        }
        free(v);
}

static void tick(struct server *srv)
{
        struct sandbox **all = NULL;
        size_t n = 0;
        if (registry_list(srv->registry, &all, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                sampler_sample(srv, all[i]);
                sandbox_unref(all[i]);
        }
        free(all);
        sampler_persist_paused(srv, false);
        delete_expired_paused(srv);
}

#define GC_EVERY_TICKS 12 /* a minute: layers freed by killed sandboxes go */

/* The pool's counterpart: below the reserve new sandboxes are refused, and running ones get
 * ENOSPC from their writes once it is full (nothing is lost: the error is the write's). */
static void watch_pool(struct server *srv, bool *low)
{
        struct disk_pool_space sp;
        const struct sbxd_config *c = srv->config;
        if (disk_pool_space(srv->disk_pool, &sp) < 0)
                return;
        bool now_low = sp.free >> 20 < c->disk_reserve_mb;
        if (now_low && !*low)
                log_error("storage pool: %llu MiB free of %llu MiB, below the reserve of %llu "
                          "MiB: new sandboxes are refused (sbx storage grow SIZE adds space)",
                          (unsigned long long)(sp.free >> 20), (unsigned long long)(sp.size >> 20),
                          (unsigned long long)c->disk_reserve_mb);
        else if (!now_low && *low)
                log_info("storage pool: %llu MiB free again", (unsigned long long)(sp.free >> 20));
        *low = now_low;
}

/* Say once when the state disk's free space falls below the reserve, and once when it is back:
 * new disks are refused meanwhile, and with overcommit running sandboxes may lose writes. */
static void watch_state_disk(struct server *srv, bool *low)
{
        struct statvfs sv;
        const struct sbxd_config *c = srv->config;
        if (srv->disk_pool) {
                watch_pool(srv, low);
                return;
        }
        if (!srv->disk_images || statvfs(c->state_dir, &sv) < 0)
                return;
        uint64_t free_mb = (uint64_t)sv.f_bavail * sv.f_frsize >> 20;
        bool now_low = free_mb < c->disk_reserve_mb;
        if (now_low && !*low)
                log_error("state disk of %s: %llu MiB free, below the reserve of %llu MiB: new "
                          "sandbox disks are refused%s",
                          c->state_dir, (unsigned long long)free_mb,
                          (unsigned long long)c->disk_reserve_mb,
                          c->disk_overcommit > 1.0
                              ? "; with --disk-overcommit, writes in running sandboxes may fail"
                              : "");
        else if (!now_low && *low)
                log_info("state disk of %s: %llu MiB free again", c->state_dir,
                         (unsigned long long)free_mb);
        *low = now_low;
}

static void *sampler_main(void *arg)
{
        struct server *srv = arg;
        unsigned ticks = 0;
        bool disk_low = false;
        pthread_mutex_lock(&srv->lifecycle->sampler_lock);
        while (!srv->lifecycle->stopping) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += SAMPLE_INTERVAL_S;
                pthread_cond_timedwait(&srv->lifecycle->sampler_cond, &srv->lifecycle->sampler_lock,
                                       &ts);
                if (srv->lifecycle->stopping)
                        break;
                pthread_mutex_unlock(&srv->lifecycle->sampler_lock);
                tick(srv);
                watch_state_disk(srv, &disk_low);
                if (srv->volumes)
                        volume_store_sweep(srv->volumes);
                size_t layers = 0;
                /* a host fstrim may have punched the pool image through its loop device */
                if (ticks % GC_EVERY_TICKS == 0 && srv->disk_pool &&
                    disk_pool_keep_reserved(srv->disk_pool) < 0)
                        log_error("storage pool: its image cannot be preallocated again: a full "
                                  "host disk may now fail the pool's writes");
                if (++ticks % GC_EVERY_TICKS == 0 &&
                    layer_store_usage(srv->config->state_dir, &layers) >= 0 && layers > 0) {
                        int g = layer_store_gc(srv->config->state_dir, 0);
                        if (g > 0)
                                log_info("layer store: %d unreferenced layer(s) removed", g);
                }
                pthread_mutex_lock(&srv->lifecycle->sampler_lock);
        }
        pthread_mutex_unlock(&srv->lifecycle->sampler_lock);
        return NULL;
}

int sampler_start(struct server *srv)
{
        int r = pthread_create(&srv->lifecycle->sampler, NULL, sampler_main, srv);
        if (r != 0)
                return -r;
        srv->lifecycle->sampler_started = true;
        return 0;
}

void sampler_stop(struct server *srv)
{
        if (!srv->lifecycle->sampler_started)
                return;
        pthread_mutex_lock(&srv->lifecycle->sampler_lock);
        srv->lifecycle->stopping = true;
        pthread_cond_broadcast(&srv->lifecycle->sampler_cond);
        pthread_mutex_unlock(&srv->lifecycle->sampler_lock);
        pthread_join(srv->lifecycle->sampler, NULL);
        srv->lifecycle->sampler_started = false;
}
