/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pause (cgroup freezer), resume, and persisting a paused sandbox to disk. Every operation
 * holds the sandbox's op_lock, so pause, resume, snapshot and persist of one sandbox never
 * interleave; the registry lock is only taken for the end_at update.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cgroup-freeze.h"
#include "storage/layer-store.h"
#include "lifecycle/agent-log.h"
#include "lifecycle/upper.h"
#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "lifecycle/monitor.h"
#include "core/stats.h"
#include "lifecycle/teardown.h"

#define FREEZE_TIMEOUT_MS 2000

static void cgroup_name(const struct sandbox *s, char buf[static 96])
{
        snprintf(buf, 96, "%s/%s", CGROUP_PARENT, s->id);
}

static void save(struct sandbox *s)
{
        int r = sandbox_save(s);
        if (r < 0 && r != -ESRCH)
                log_warning_errno(r, "sandbox %s: saving record: %m", s->id);
}

/* sandbox_save, with -ESRCH (the dir is going away) counted as saved. */
static int save_record(struct sandbox *s)
{
        int r = sandbox_save(s);
        return r == -ESRCH ? 0 : r;
}

/* Under op_lock. must_record: a pause a client asked for is undone (thawed again) when its
 * record cannot be saved, so that nothing the client was told differs from what a restart
 * restores; the timer's pause stays in force either way (nobody was told). */
static int freeze_locked(struct sandbox *s, bool must_record)
{
        char cg[96];
        cgroup_name(s, cg);
        int r = cgroup_freeze(cg, true, FREEZE_TIMEOUT_MS);
        if (r < 0) {
                cgroup_freeze(cg, false, FREEZE_TIMEOUT_MS);
                return r;
        }
        int64_t was = s->paused_at;
        s->paused_at = (int64_t)time(NULL);
        sandbox_set_paused(s, true);
        r = save_record(s);
        if (r < 0 && must_record) {
                log_warning_errno(r, "sandbox %s: saving record: %m; pause undone", s->id);
                cgroup_freeze(cg, false, FREEZE_TIMEOUT_MS);
                sandbox_set_paused(s, false);
                s->paused_at = was;
                return r;
        }
        if (r < 0)
                log_warning_errno(r, "sandbox %s: saving record: %m", s->id);
        stats_count_pause();
        return 0;
}

/* After a freeze that was to drop the memory: persist. A persist that fails leaves the sandbox
 * paused in memory, which is still a pause; say so. */
static void drop_memory_after_freeze(struct server *srv, struct sandbox *s)
{
        int r = lifecycle_persist(srv, s);
        if (r < 0)
                log_warning_errno(r,
                                  "sandbox %s: filesystem-only pause: persisting: %m; it stays "
                                  "paused in memory",
                                  s->id);
}

int lifecycle_pause(struct server *srv, struct sandbox *s, bool keep_memory)
{
        pthread_mutex_lock(&s->op_lock);
        int r = sandbox_is_paused(s) ? -EBUSY : freeze_locked(s, true);
        pthread_mutex_unlock(&s->op_lock);
        if (r >= 0 && !keep_memory)
                drop_memory_after_freeze(srv, s);
        if (r >= 0)
                log_info("sandbox %s: paused%s", s->id, keep_memory ? "" : " (files only)");
        return r;
}

int lifecycle_drop_memory(struct server *srv, struct sandbox *s)
{
        pthread_mutex_lock(&s->op_lock);
        bool in_memory = sandbox_is_paused(s) && !s->persisted;
        pthread_mutex_unlock(&s->op_lock);
        return in_memory ? lifecycle_persist(srv, s) : 0;
}

int lifecycle_pause_expired(struct server *srv, struct sandbox *s)
{
        pthread_mutex_lock(&s->op_lock);
        /* a connect may have resumed it (and moved endAt) between the timer's mark and here */
        if (!sandbox_is_paused(s) || sandbox_get_end_at(s) > (int64_t)time(NULL)) {
                pthread_mutex_unlock(&s->op_lock);
                return 0;
        }
        bool froze = !s->persisted;
        int r = froze ? freeze_locked(s, false) : 0;
        if (r < 0)
                sandbox_set_paused(s, false);
        pthread_mutex_unlock(&s->op_lock);
        if (r >= 0 && froze && s->pause_drops_memory)
                drop_memory_after_freeze(srv, s);
        if (r >= 0)
                log_info("sandbox %s: paused (timeout, onTimeout pause%s)", s->id,
                         s->pause_drops_memory ? ", files only" : "");
        return r;
}

/* Back to "persisted": nothing of a restart may be left running. Under op_lock. */
static void unrestart_locked(struct server *srv, struct sandbox *s)
{
        if (!s->persisted)
                monitor_unwatch(srv, s);
        teardown_processes(s->id, s->pid, s->pidfd, s->dir);
        s->pidfd = safe_close(s->pidfd);
        agent_log_close(TAKE_PTR(s->log));
        s->pid = 0;
        s->persisted = true;
}

/* A persisted sandbox: start its processes again on its layers (the persisted upper on top),
 * same id, token, uid slot, env. Under op_lock. */
static int restart_locked(struct server *srv, struct sandbox *s, char *errmsg, size_t errlen)
{
        struct template_info t = {};
        char ignored[256];
        /* the template gives env and default user/workdir; layers and binds are the record's */
        if (lifecycle_load_template(srv, s->template_id, &t, ignored, sizeof(ignored)) < 0) {
                t.default_user = strdup("user");
                t.default_workdir = strdup("/home/user");
                if (!t.default_user || !t.default_workdir) {
                        template_done(&t);
                        return -ENOMEM;
                }
        }
        int r = lifecycle_spawn(srv, s, &t, errmsg, errlen);
        template_done(&t);
        if (r < 0) {
                unrestart_locked(srv, s);
                return r;
        }
        s->persisted = false;
        r = monitor_watch(srv, s);
        if (r < 0)
                log_warning_errno(r, "sandbox %s: cannot watch the agent: %m", s->id);
        return 0;
}

int lifecycle_resume(struct server *srv, struct sandbox *s, int64_t timeout_s, bool *ret_resumed,
                     char *errmsg, size_t errlen)
{
        int64_t end = (int64_t)time(NULL) + timeout_s;
        int r = 0;
        layer_store_read_lock(); /* a persisted sandbox's layers must not be collected */
        pthread_mutex_lock(&s->op_lock);
        if (s->moved) { /* its files went to another node (cluster/move.h): never here again */
                pthread_mutex_unlock(&s->op_lock);
                layer_store_unlock();
                snprintf(errmsg, errlen, "sandbox %s moved to another node", s->id);
                *ret_resumed = false;
                return -ENOENT;
        }
        bool paused = sandbox_is_paused(s), restarted = paused && s->persisted;
        char cg[96];
        cgroup_name(s, cg);
        if (restarted) {
                r = restart_locked(srv, s, errmsg, errlen);
        } else if (paused) {
                r = cgroup_freeze(cg, false, FREEZE_TIMEOUT_MS);
                if (r < 0)
                        snprintf(errmsg, errlen, "thawing the sandbox failed: %s", strerror(-r));
        }
        if (r >= 0) {
                /* resumed: the timeout starts again; running: connect only extends it */
                pthread_mutex_lock(&s->end_lock);
                int64_t old_end = sandbox_get_end_at(s);
                registry_set_end_at(srv->registry, s, end, !paused);
                sandbox_set_paused(s, false);
                r = save_record(s);
                if (r < 0) {
                        /* undo: what a restart would restore is what the client was told */
                        log_warning_errno(r, "sandbox %s: saving record: %m; %s", s->id,
                                          paused ? "resume undone" : "endAt left as it was");
                        registry_set_end_at(srv->registry, s, old_end, false);
                        sandbox_set_paused(s, paused);
                        if (restarted)
                                unrestart_locked(srv, s);
                        else if (paused)
                                cgroup_freeze(cg, true, FREEZE_TIMEOUT_MS);
                        snprintf(errmsg, errlen,
                                 "the sandbox's record could not be saved (%s); it is %s",
                                 strerror(-r), paused ? "still paused" : "unchanged");
                }
                pthread_mutex_unlock(&s->end_lock);
        }
        if (r >= 0) {
                registry_wake(srv->registry);
                if (paused)
                        stats_count_resume();
        }
        pthread_mutex_unlock(&s->op_lock);
        layer_store_unlock();
        if (r >= 0 && paused)
                log_info("sandbox %s: resumed", s->id);
        *ret_resumed = paused;
        return r;
}

int lifecycle_auto_resume(struct server *srv, struct sandbox *s)
{
        if (!s->auto_resume)
                return 0;
        char err[256];
        bool resumed;
        int r = lifecycle_resume(srv, s, s->timeout_s > 0 ? s->timeout_s : TIMEOUT_DEFAULT_S,
                                 &resumed, err, sizeof(err));
        if (r < 0)
                return log_warning_errno(r, "sandbox %s: auto-resume failed: %s", s->id, err);
        if (resumed)
                log_info("sandbox %s: resumed by traffic (autoResume)", s->id);
        return 1;
}

int lifecycle_persist(struct server *srv, struct sandbox *s)
{
        int r = 0;
        char hex[LAYER_ID_MAX];
        layer_store_read_lock(); /* lock order: store, then op_lock (as snapshots) */
        pthread_mutex_lock(&s->op_lock);
        if (!sandbox_is_paused(s) || s->persisted) {
                r = sandbox_is_paused(s) ? 0 : -EINVAL;
                goto out;
        }
        /* A pool upper stays where it is: the subvolume outlives the processes, and a resume
         * mounts it again. Any other upper goes into the layer store first. */
        bool in_pool = lifecycle_upper_in_pool(srv, s);
        if (in_pool)
                snprintf(hex, sizeof(hex), "in the storage pool");
        r = in_pool ? 0 : lifecycle_upper_ingest(srv, s, hex);
        cJSON *layers = r >= 0 ? cJSON_Duplicate(s->layers, 1) : NULL;
        if (r >= 0 && !layers)
                r = -ENOMEM;
        if (r < 0)
                goto out;
        if (!in_pool) {
                char path[4096];
                layer_store_path(srv->config->state_dir, hex, path, sizeof(path));
                cJSON_AddItemToArray(layers, cJSON_CreateString(path));
        }
        cJSON *was = s->layers;
        s->layers = layers;
        s->persisted = true;
        /* the layer is referenced by the record before the processes go; a record that cannot
         * say so keeps the sandbox frozen in memory (the sampler tries again later) */
        r = save_record(s);
        if (r < 0) {
                log_warning_errno(r, "sandbox %s: saving record: %m; not persisted", s->id);
                s->layers = was;
                s->persisted = false;
                cJSON_Delete(layers);
                goto out;
        }
        cJSON_Delete(was);
        monitor_unwatch(srv, s);
        int t = teardown_processes(s->id, s->pid, s->pidfd, s->dir);
        if (t < 0)
                log_warning_errno(t, "sandbox %s: stopping its processes: %m", s->id);
        s->pidfd = safe_close(s->pidfd);
        agent_log_close(TAKE_PTR(s->log));
        s->pid = 0;
        save(s); /* a record still naming the pid is fine: adoption stops what is left */
        log_info("sandbox %s: persisted to disk (%s%.12s)", s->id, in_pool ? "" : "layer ", hex);
out:
        pthread_mutex_unlock(&s->op_lock);
        layer_store_unlock();
        return r;
}
