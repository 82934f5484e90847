/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Creating a sandbox for a request (lifecycle_create(), declared in lifecycle/lifecycle.h): the
 * operator's per-sandbox maxima, --max-sandboxes, a turn among --max-creates, then a warm-pool
 * member or a cold start, registered and watched.
 */
#include "lifecycle/lifecycle.h"
#include "core/cluster-hooks.h"
#include "lifecycle/lifecycle-state.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/stats.h"
#include "lifecycle/monitor.h"
#include "json-util.h"
#include "lifecycle/pool.h"
#include "lifecycle/volume-mounts.h"
#include "log.h"
#include "macros.h"
#include "storage/layer-store.h"
#include "storage/template.h"
#include "time-util.h"

static int fill_identity(struct sandbox *s, const struct create_params *p,
                         const struct template_info *t, const cJSON *mounts)
{
        int r = lifecycle_new_identity(s);
        if (r < 0)
                return r;
        snprintf(s->template_id, sizeof(s->template_id), "%s", p->template_id);
        s->cpu_count = p->cpu_count ? p->cpu_count : t->cpu_count;
        s->memory_mb = p->memory_mb ? p->memory_mb : t->memory_mb;
        s->disk_mb = p->disk_mb ? p->disk_mb : t->disk_mb;
        if (!(s->layers = cJSON_Duplicate(t->layers, 1)) ||
            !(s->binds = cJSON_Duplicate(t->binds, 1)) ||
            (mounts && !(s->volume_mounts = cJSON_Duplicate(mounts, 1))) ||
            (t->upper_seed && !(s->upper_seed = strdup(t->upper_seed))))
                return -ENOMEM;
        return lifecycle_apply_params(s, p);
}

/* field's value v (asked: in the request, else the template's) against the operator's max:
 * 0, or -EINVAL with the message naming the limit. */
static int check_max(const char *field, bool asked, uint64_t v, uint64_t max, const char *unit,
                     char *errmsg, size_t errlen)
{
        if (v <= max)
                return 0;
        snprintf(errmsg, errlen, "%s%s %llu is above this server's limit of %llu %s per sandbox",
                 asked ? "" : "the template's ", field, (unsigned long long)v,
                 (unsigned long long)max, unit);
        return -EINVAL;
}

/* The sizes asked for (or the template's) against the operator's per-sandbox maxima: -EINVAL
 * (400) naming the limit. */
static int within_maxima(struct server *srv, const struct create_params *p,
                         const struct template_info *t, char *errmsg, size_t errlen)
{
        const struct sbxd_config *c = srv->config;
        unsigned cpus = p->cpu_count ? p->cpu_count : t->cpu_count;
        uint64_t mem = p->memory_mb ? p->memory_mb : t->memory_mb;
        uint64_t disk = p->disk_mb ? p->disk_mb : t->disk_mb;
        int r = check_max("cpuCount", p->cpu_count != 0, cpus, c->max_cpus, "CPUs", errmsg, errlen);
        if (r == 0)
                r = check_max("memoryMB", p->memory_mb != 0, mem, c->max_memory_mb, "MiB", errmsg,
                              errlen);
        if (r == 0)
                r = check_max("diskSizeMB", p->disk_mb != 0, disk, c->max_disk_mb, "MiB", errmsg,
                              errlen);
        return r;
}

/* Past --max-sandboxes (running + paused + being created): -EDQUOT (429). */
static int admit(struct server *srv, char *errmsg, size_t errlen)
{
        unsigned n = (unsigned)registry_count(srv->registry) +
                     __atomic_add_fetch(&srv->lifecycle->starting, 1, __ATOMIC_RELAXED);
        if (n > srv->config->max_sandboxes) {
                __atomic_sub_fetch(&srv->lifecycle->starting, 1, __ATOMIC_RELAXED);
                snprintf(errmsg, errlen, "too many sandboxes (limit %u)",
                         srv->config->max_sandboxes);
                stats_count_rejected();
                return -EDQUOT;
        }
        return 0;
}

/* A turn among the --max-creates cold creates in flight. Past them a create waits, in arrival
 * order as far as the condition variable goes, up to --create-wait seconds (the SDKs do not
 * retry a 429, so a burst of 500 creates is queued rather than refused); then -EDQUOT (429). */
static int create_turn_take(struct server *srv)
{
        const struct sbxd_config *c = srv->config;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += c->create_wait_s;
        int r = 0;
        pthread_mutex_lock(&srv->lifecycle->create_lock);
        while (srv->lifecycle->creates_inflight >= c->max_creates && r == 0)
                r = c->create_wait_s == 0
                        ? ETIMEDOUT
                        : pthread_cond_timedwait(&srv->lifecycle->create_turn,
                                                 &srv->lifecycle->create_lock, &until);
        if (srv->lifecycle->creates_inflight < c->max_creates) {
                srv->lifecycle->creates_inflight++;
                r = 0;
        }
        pthread_mutex_unlock(&srv->lifecycle->create_lock);
        return r == 0 ? 0 : -EDQUOT;
}

static void create_turn_give(struct server *srv)
{
        pthread_mutex_lock(&srv->lifecycle->create_lock);
        srv->lifecycle->creates_inflight--;
        pthread_cond_signal(&srv->lifecycle->create_turn);
        pthread_mutex_unlock(&srv->lifecycle->create_lock);
}

static int create_cold(struct server *srv, const struct create_params *p,
                       const struct template_info *t, const cJSON *mounts, struct net_policy *net,
                       struct sandbox **ret, char *errmsg, size_t errlen)
{
        _cleanup_net_policy_ struct net_policy *owned = net;
        int r = create_turn_take(srv);
        if (r < 0) {
                snprintf(errmsg, errlen,
                         "too many sandbox creations in progress (limit %u, waited %u s)",
                         srv->config->max_creates, srv->config->create_wait_s);
                stats_count_rejected();
                return r;
        }
        _cleanup_sandbox_ struct sandbox *s = sandbox_new();
        r = s ? registry_slot_acquire(srv->registry, &s->slot) : -ENOMEM;
        if (r == -EUSERS)
                snprintf(errmsg, errlen, "too many sandboxes (%d uid slots)", REGISTRY_MAX_SLOTS);
        if (r >= 0)
                r = fill_identity(s, p, t, mounts);
        if (r >= 0 && owned) /* the sandbox owns it from here */
                sandbox_set_net(s, TAKE_PTR(owned));
        if (r >= 0) /* held from here to the teardown, which gives them back */
                r = volume_mounts_acquire(srv, s, errmsg, errlen);
        if (r >= 0)
                r = lifecycle_spawn(srv, s, t, errmsg, errlen);
        if (r >= 0)
                r = monitor_register(srv, s);
        create_turn_give(srv);
        if (r < 0) {
                if (!errmsg[0])
                        snprintf(errmsg, errlen, "sandbox start failed: %s", strerror(-r));
                /* only what was made is undone: without a slot nothing was (a failed host-wide
                 * claim, EMFILE say), and a teardown then has no sandbox of its own to remove */
                if (s && s->slot >= 0)
                        lifecycle_destroy(srv, TAKE_PTR(s), "failed start");
                return r == -EUSERS || r == -ENOMEM || r == -ENOSPC || r == -EINVAL ? r : -EIO;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int lifecycle_create(struct server *srv, const struct create_params *p, struct sandbox **ret,
                     char *errmsg, size_t errlen)
{
        struct template_info t = {};
        int64_t t0 = now_us();
        errmsg[0] = 0;
        /* held until the record (which references the layers) is written: no gc meanwhile */
        layer_store_read_lock();
        int r = lifecycle_load_template(srv, p->template_id, &t, errmsg, errlen);
        if (r >= 0)
                r = within_maxima(srv, p, &t, errmsg, errlen);
        _cleanup_json_ cJSON *mounts = NULL;
        if (r >= 0 && p->volume_mounts)
                r = volume_mounts_resolve(srv, p->volume_mounts, &mounts, errmsg, errlen);
        if (r >= 0)
                r = admit(srv, errmsg, errlen);
        if (r < 0) {
                layer_store_unlock();
                template_done(&t);
                return r;
        }
        struct sandbox *s = NULL;
        bool pooled = false;
        /* a pool member has no volumes (they are mounted by its jailer, at start) and is
         * loopback-only (egress): a sandbox with either starts cold */
        struct net_policy *net = NULL;
        int link = lifecycle_net_for_create(srv, &p->net, &net);
        if (link < 0)
                r = link;
        if (r >= 0 && srv->lifecycle->pool && !link && !p->cpu_count && !p->memory_mb &&
            !p->disk_mb && !mounts)
                pooled = pool_take(srv->lifecycle->pool, p, &s) >= 0;
        if (r >= 0 && !pooled)
                r = create_cold(srv, p, &t, mounts, net, &s, errmsg, errlen);
        else
                net_policy_free(net);
        __atomic_sub_fetch(&srv->lifecycle->starting, 1, __ATOMIC_RELAXED);
        layer_store_unlock();
        template_done(&t);
        if (r < 0) {
                stats_count_create_error();
                return r;
        }
        if (srv->cluster_hooks) {
                /* --cluster: the sandbox -> node mapping is in etcd before the create answers */
                r = srv->cluster_hooks->created(srv, s->id);
                if (r < 0) {
                        snprintf(errmsg, errlen,
                                 "cluster store unavailable: the sandbox could not be recorded "
                                 "in etcd; creates are refused");
                        (void)lifecycle_kill(srv, s->id);
                        sandbox_unref(s);
                        stats_count_create_error();
                        return -EAGAIN;
                }
        }
        int64_t us = now_us() - t0;
        stats_observe_create(us, pooled);
        log_info(
            "sandbox %s: started (template %s, pid %d, uid slot %d, endAt +%llds%s) in %lld us",
            s->id, s->template_id, (int)s->pid, s->slot, (long long)p->timeout_s,
            pooled ? ", from the warm pool" : "", (long long)us);
        *ret = s;
        return 0;
}
