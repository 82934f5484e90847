/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/lifecycle.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "channel/agent-client.h"
#include "lifecycle/jail-spawn.h"
#include "storage/layer-store.h"
#include "log.h"
#include "lifecycle/monitor.h"
#include "macros.h"
#include "missing-syscalls.h"
#include <sys/pidfd.h>
#include "lifecycle/pool.h"
#include "random-util.h"
#include "core/stats.h"
#include "lifecycle/teardown.h"
#include "storage/disk-image.h"
#include "storage/template.h"
#include "time-util.h"

/* Strings of a cJSON array (a template's or a sandbox's layers) into the spec's list. */
static int spec_layers(const cJSON *a, struct sbx_jail_spec *spec, const char **ret_msg)
{
        int n = cJSON_GetArraySize(a);
        const cJSON *e;
        if (n == 0)
                return 0;
        if (!(spec->layers = calloc((size_t)n, sizeof(char *))))
                return -ENOMEM;
        cJSON_ArrayForEach(e, a)
        {
                if (!cJSON_IsString(e)) {
                        *ret_msg = "layers: each layer must be a path";
                        return -EINVAL;
                }
                if (!(spec->layers[spec->n_layers] = strdup(e->valuestring)))
                        return -ENOMEM;
                spec->n_layers++;
        }
        return 0;
}

/* {source, target, readonly?} objects; absent readonly means read-only, as in the jailer. */
static int spec_binds(const cJSON *a, struct sbx_jail_spec *spec, const char **ret_msg)
{
        int n = cJSON_GetArraySize(a);
        const cJSON *e;
        if (n == 0)
                return 0;
        if (!(spec->binds = calloc((size_t)n, sizeof(*spec->binds))))
                return -ENOMEM;
        cJSON_ArrayForEach(e, a)
        {
                const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "source");
                const cJSON *dst = cJSON_GetObjectItemCaseSensitive(e, "target");
                const cJSON *ro = cJSON_GetObjectItemCaseSensitive(e, "readonly");
                if (!cJSON_IsString(src) || !cJSON_IsString(dst) || (ro && !cJSON_IsBool(ro))) {
                        *ret_msg = "binds: each bind is {source, target, readonly: bool}";
                        return -EINVAL;
                }
                struct sbx_jail_bind *b = &spec->binds[spec->n_binds];
                b->source = strdup(src->valuestring);
                b->target = strdup(dst->valuestring);
                b->readonly = !ro || cJSON_IsTrue(ro);
                spec->n_binds++;
                if (!b->source || !b->target)
                        return -ENOMEM;
        }
        return 0;
}

static int spec_env_add(struct sbx_jail_spec *spec, const char *name, const char *value)
{
        struct sbx_jail_env *v = &spec->env[spec->n_env];
        v->name = strdup(name);
        v->value = strdup(value);
        spec->n_env++;
        return v->name && v->value ? 0 : -ENOMEM;
}

/* The template's environment, plus a PATH when it has none. */
static int spec_env(const cJSON *env, struct sbx_jail_spec *spec, const char **ret_msg)
{
        const cJSON *e;
        int r;
        if (!(spec->env = calloc((size_t)cJSON_GetArraySize(env) + 1, sizeof(*spec->env))))
                return -ENOMEM;
        cJSON_ArrayForEach(e, env)
        {
                if (!cJSON_IsString(e) || !e->string) {
                        *ret_msg = "env: values must be strings";
                        return -EINVAL;
                }
                if ((r = spec_env_add(spec, e->string, e->valuestring)) < 0)
                        return r;
        }
        if (!cJSON_GetObjectItemCaseSensitive(env, "PATH"))
                return spec_env_add(spec, "PATH",
                                    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        return 0;
}

int lifecycle_jail_spec(const struct server *srv, const struct sandbox *s,
                        const struct template_info *t, struct sbx_jail_spec **ret_spec,
                        const char **ret_msg)
{
        _cleanup_jail_spec_ struct sbx_jail_spec *spec = calloc(1, sizeof(*spec));
        int r;
        if (!spec)
                return -ENOMEM;
        if (!(spec->id = strdup(s->id)) || asprintf(&spec->rootfs, "%s/rootfs", s->dir) < 0 ||
            asprintf(&spec->socket, "%s/%s", s->dir, AGENT_SOCKET_NAME) < 0 ||
            !(spec->agent = strdup(srv->config->agent)) ||
            asprintf(&spec->cgroup, "%s/%s", CGROUP_PARENT, s->id) < 0)
                return -ENOMEM;
        if ((r = spec_layers(s->layers ? s->layers : t->layers, spec, ret_msg)) < 0 ||
            (r = spec_binds(s->binds ? s->binds : t->binds, spec, ret_msg)) < 0)
                return r;
        spec->uid_base = registry_uid_base(s->slot);
        spec->uid_count = UID_SLOT_SIZE;
        spec->memory_bytes = (uint64_t)s->memory_mb * 1024 * 1024;
        spec->pids_max = SANDBOX_PIDS_MAX;
        spec->cpu_quota_us = (int64_t)s->cpu_count * CPU_PERIOD_US;
        spec->cpu_period_us = CPU_PERIOD_US;
        spec->disk_bytes = (uint64_t)s->disk_mb * 1024 * 1024;
        /* the upper's file system is visible at <dir>/rootfs on the host: snapshots read it */
        spec->upper_on_host = true;
        if (srv->disk_images && asprintf(&spec->disk_image, "%s/" DISK_IMAGE_NAME, s->dir) < 0)
                return -ENOMEM;
        if ((r = spec_env(t->env, spec, ret_msg)) < 0)
                return r;
        *ret_spec = TAKE_PTR(spec);
        return 0;
}

static int make_sandbox_dir(const struct server *srv, struct sandbox *s)
{
        char path[4096];
        if (s->dir) { /* resuming a persisted sandbox: its dir and record exist */
                snprintf(path, sizeof(path), "%s/rootfs", s->dir);
                return mkdir(path, 0700) < 0 && errno != EEXIST ? -errno : 0;
        }
        snprintf(path, sizeof(path), "%s/sandboxes", srv->config->state_dir);
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_free_ char *dir = NULL;
        if (asprintf(&dir, "%s/%s", path, s->id) < 0)
                return -ENOMEM;
        if (mkdir(dir, 0700) < 0)
                return -errno;
        /* Only a dir we created is ever removed on failure. */
        s->dir = TAKE_PTR(dir);
        snprintf(path, sizeof(path), "%s/rootfs", s->dir);
        if (mkdir(path, 0700) < 0)
                return -errno;
        return 0;
}

/* The last bytes of a (small) log file, for an error line; "" when unreadable. */
static const char *log_tail(const char *path, char *buf, size_t size)
{
        buf[0] = 0;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return buf;
        off_t end = lseek(fd, 0, SEEK_END);
        off_t from = end > (off_t)size - 1 ? end - (off_t)size + 1 : 0;
        ssize_t n = pread(fd, buf, size - 1, from);
        buf[n > 0 ? n : 0] = 0;
        return buf;
}

int lifecycle_init_agent(const struct sandbox *s, const struct template_info *t)
{
        cJSON *j = cJSON_CreateObject();
        if (!j)
                return -ENOMEM;
        cJSON_AddItemToObject(j, "envVars",
                              s->env_vars ? cJSON_Duplicate(s->env_vars, 1) : cJSON_CreateObject());
        cJSON_AddStringToObject(j, "defaultUser", t->default_user);
        cJSON_AddStringToObject(j, "defaultWorkdir", t->default_workdir);
        cJSON_AddStringToObject(j, "accessToken", s->token);
        _cleanup_free_ char *body = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
        if (!body)
                return -ENOMEM;
        int st = agent_call_internal(s->dir, "POST", "/init", body, AGENT_INIT_TIMEOUT_MS);
        if (st < 0)
                return st;
        return st >= 200 && st < 300 ? 0 : -EPROTO;
}

/* Steps after the slot and dir exist; on failure the caller tears down. */
static int start(struct server *srv, struct sandbox *s, const struct template_info *t, char *errmsg,
                 size_t errlen)
{
        int r;
        _cleanup_jail_spec_ struct sbx_jail_spec *spec = NULL;
        const char *why = NULL;
        r = lifecycle_jail_spec(srv, s, t, &spec, &why);
        if (r == -EINVAL) {
                snprintf(errmsg, errlen, "sandbox start failed at jail-spec: %s", why);
                log_error("sandbox %s: cannot build its jail spec: %s", s->id, why);
                return -EIO;
        }
        if (r < 0)
                return r;
        struct jail_result jr;
        char log_path[4096];
        snprintf(log_path, sizeof(log_path), "%s/%s", s->dir, SANDBOX_LOG_NAME);
        r = jail_spawn(srv->config->jailer, log_path, spec, &jr);
        if (r < 0 || !jr.ok) {
                char tail[1024];
                snprintf(errmsg, errlen, "sandbox start failed at %s: %s", jr.step, jr.message);
                log_error("sandbox %s: jailer failed at %s (errno %d): %s; its log: %s", s->id,
                          jr.step, jr.err, jr.message, log_tail(log_path, tail, sizeof(tail)));
                return -EIO;
        }
        s->pid = jr.pid;
        s->pidfd = pidfd_open(s->pid, 0);
        if (s->pidfd < 0)
                log_warning_errno(errno, "sandbox %s: pidfd_open(%d): %m", s->id, (int)s->pid);

        r = lifecycle_init_agent(s, t);
        if (r < 0) {
                snprintf(errmsg, errlen, "sandbox start failed at agent-init: %s", strerror(-r));
                log_error_errno(r, "sandbox %s: agent /init failed: %m", s->id);
                return -EIO;
        }
        r = sandbox_save(s);
        if (r < 0) {
                snprintf(errmsg, errlen, "sandbox start failed at save-record: %s", strerror(-r));
                return log_error_errno(r, "sandbox %s: writing sandbox.json: %m", s->id);
        }
        return 0;
}

int lifecycle_new_identity(struct sandbox *s)
{
        int r = random_sandbox_id(s->id);
        if (r >= 0)
                r = random_hex(s->token, TOKEN_HEX_BYTES);
        return r;
}

/* The request's part of a sandbox: what a pooled sandbox gets when it is taken. */
int lifecycle_apply_params(struct sandbox *s, const struct create_params *p)
{
        cJSON_Delete(s->metadata);
        cJSON_Delete(s->env_vars);
        s->metadata = s->env_vars = NULL;
        if ((p->metadata && !(s->metadata = cJSON_Duplicate(p->metadata, 1))) ||
            (p->env_vars && !(s->env_vars = cJSON_Duplicate(p->env_vars, 1))))
                return -ENOMEM;
        s->auto_pause = p->auto_pause;
        s->pause_drops_memory = p->pause_drops_memory;
        s->auto_resume = p->auto_resume;
        s->timeout_s = p->timeout_s;
        sandbox_set_started_now(s);
        sandbox_set_end_at(s, sandbox_started_s(s) + p->timeout_s);
        return 0;
}

static int fill_identity(struct sandbox *s, const struct create_params *p,
                         const struct template_info *t)
{
        int r = lifecycle_new_identity(s);
        if (r < 0)
                return r;
        snprintf(s->template_id, sizeof(s->template_id), "%s", p->template_id);
        s->cpu_count = p->cpu_count ? p->cpu_count : t->cpu_count;
        s->memory_mb = p->memory_mb ? p->memory_mb : t->memory_mb;
        s->disk_mb = p->disk_mb ? p->disk_mb : t->disk_mb;
        if (!(s->layers = cJSON_Duplicate(t->layers, 1)) ||
            !(s->binds = cJSON_Duplicate(t->binds, 1)))
                return -ENOMEM;
        return lifecycle_apply_params(s, p);
}

int lifecycle_load_template(struct server *srv, const char *name, struct template_info *t,
                            char *errmsg, size_t errlen)
{
        int r = template_load(srv->config->state_dir, name, t);
        if (r < 0) {
                if (r == -ENOENT)
                        snprintf(errmsg, errlen, "template '%s' not found", name);
                else
                        snprintf(errmsg, errlen, "template '%s' is unusable: %s", name,
                                 strerror(-r));
                return r == -ENOENT ? r : -EIO;
        }
        return 0;
}

int lifecycle_spawn(struct server *srv, struct sandbox *s, const struct template_info *t,
                    char *errmsg, size_t errlen)
{
        int r = make_sandbox_dir(srv, s);
        if (r < 0) {
                snprintf(errmsg, errlen, "sandbox start failed at state-dir: %s", strerror(-r));
                return r;
        }
        if (srv->disk_images) {
                const struct disk_policy pol = {
                    .overcommit = srv->config->disk_overcommit,
                    .reserve_bytes = srv->config->disk_reserve_mb << 20,
                };
                errmsg[0] = 0;
                r = disk_image_create(srv->config->state_dir, (uint64_t)s->disk_mb << 20, s->dir,
                                      &pol, errmsg, errlen);
                if (r < 0) {
                        if (!errmsg[0])
                                snprintf(errmsg, errlen,
                                         "sandbox start failed at its disk image: %s",
                                         strerror(-r));
                        return r;
                }
        }
        return start(srv, s, t, errmsg, errlen);
}

int lifecycle_register(struct server *srv, struct sandbox *s)
{
        int r = registry_add(srv->registry, s);
        if (r < 0)
                return r;
        r = monitor_watch(srv, s);
        if (r < 0)
                log_warning_errno(r, "sandbox %s: cannot watch the agent: %m", s->id);
        return 0;
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
        const char *who = p->cpu_count ? "cpuCount" : "the template's cpuCount";
        if (cpus > c->max_cpus) {
                snprintf(errmsg, errlen,
                         "%s %u is above this server's limit of %u CPUs per sandbox", who, cpus,
                         c->max_cpus);
                return -EINVAL;
        }
        who = p->memory_mb ? "memoryMB" : "the template's memoryMB";
        if (mem > c->max_memory_mb) {
                snprintf(errmsg, errlen,
                         "%s %llu is above this server's limit of %llu MiB per sandbox", who,
                         (unsigned long long)mem, (unsigned long long)c->max_memory_mb);
                return -EINVAL;
        }
        who = p->disk_mb ? "diskSizeMB" : "the template's diskSizeMB";
        if (disk > c->max_disk_mb) {
                snprintf(errmsg, errlen,
                         "%s %llu is above this server's limit of %llu MiB per sandbox", who,
                         (unsigned long long)disk, (unsigned long long)c->max_disk_mb);
                return -EINVAL;
        }
        return 0;
}

/* Past --max-sandboxes (running + paused + being created): -EDQUOT (429). */
static int admit(struct server *srv, char *errmsg, size_t errlen)
{
        unsigned n = (unsigned)registry_count(srv->registry) +
                     __atomic_add_fetch(&srv->starting, 1, __ATOMIC_RELAXED);
        if (n > srv->config->max_sandboxes) {
                __atomic_sub_fetch(&srv->starting, 1, __ATOMIC_RELAXED);
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
        pthread_mutex_lock(&srv->create_lock);
        while (srv->creates_inflight >= c->max_creates && r == 0)
                r = c->create_wait_s == 0
                        ? ETIMEDOUT
                        : pthread_cond_timedwait(&srv->create_turn, &srv->create_lock, &until);
        if (srv->creates_inflight < c->max_creates) {
                srv->creates_inflight++;
                r = 0;
        }
        pthread_mutex_unlock(&srv->create_lock);
        return r == 0 ? 0 : -EDQUOT;
}

static void create_turn_give(struct server *srv)
{
        pthread_mutex_lock(&srv->create_lock);
        srv->creates_inflight--;
        pthread_cond_signal(&srv->create_turn);
        pthread_mutex_unlock(&srv->create_lock);
}

static int create_cold(struct server *srv, const struct create_params *p,
                       const struct template_info *t, struct sandbox **ret, char *errmsg,
                       size_t errlen)
{
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
                r = fill_identity(s, p, t);
        if (r >= 0)
                r = lifecycle_spawn(srv, s, t, errmsg, errlen);
        if (r >= 0)
                r = lifecycle_register(srv, s);
        create_turn_give(srv);
        if (r < 0) {
                if (!errmsg[0])
                        snprintf(errmsg, errlen, "sandbox start failed: %s", strerror(-r));
                if (s && r != -EUSERS)
                        lifecycle_destroy(srv, TAKE_PTR(s), "failed start");
                return r == -EUSERS || r == -ENOMEM || r == -ENOSPC ? r : -EIO;
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
        if (r >= 0)
                r = admit(srv, errmsg, errlen);
        if (r < 0) {
                layer_store_unlock();
                template_done(&t);
                return r;
        }
        struct sandbox *s = NULL;
        bool pooled = false;
        if (srv->pool && !p->cpu_count && !p->memory_mb && !p->disk_mb)
                pooled = pool_take(srv->pool, p, &s) >= 0;
        if (!pooled)
                r = create_cold(srv, p, &t, &s, errmsg, errlen);
        __atomic_sub_fetch(&srv->starting, 1, __ATOMIC_RELAXED);
        layer_store_unlock();
        template_done(&t);
        if (r < 0) {
                stats_count_create_error();
                return r;
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

void lifecycle_destroy(struct server *srv, struct sandbox *s, const char *why)
{
        if (!s)
                return;
        sandbox_mark_gone(s); /* a concurrent timeout/connect must not write into the dir */
        int r = teardown_sandbox(s->id, s->pid, s->pidfd, s->dir);
        if (r < 0)
                log_error_errno(r, "sandbox %s: teardown (%s) incomplete: %m", s->id, why);
        else
                log_info("sandbox %s: removed (%s)", s->id, why);
        /* A slot whose processes may still run is never reused. */
        if (r != -ETIMEDOUT)
                registry_slot_release(srv->registry, s->slot);
        sandbox_unref(s);
}

int lifecycle_kill(struct server *srv, const char *id)
{
        struct sandbox *s = registry_take(srv->registry, id);
        if (!s)
                return -ENOENT;
        lifecycle_destroy(srv, s, "killed");
        return 0;
}

static void *timer_main(void *arg)
{
        struct server *srv = arg;
        struct sandbox *s;
        bool pause;
        while ((s = registry_wait_expired(srv->registry, &pause))) {
                if (!pause) {
                        lifecycle_destroy(srv, s, "timeout");
                        continue;
                }
                /* onTimeout "pause": freeze; a sandbox that cannot be frozen is killed */
                int r = lifecycle_pause_expired(srv, s);
                if (r < 0) {
                        log_warning_errno(r, "sandbox %s: auto-pause failed, killing: %m", s->id);
                        lifecycle_kill(srv, s->id);
                }
                sandbox_unref(s);
        }
        return NULL;
}

int lifecycle_timer_start(struct server *srv)
{
        int r = pthread_create(&srv->timer, NULL, timer_main, srv);
        if (r != 0)
                return -r;
        srv->timer_started = true;
        return 0;
}

void lifecycle_timer_stop(struct server *srv)
{
        registry_shutdown(srv->registry);
        if (srv->timer_started)
                pthread_join(srv->timer, NULL);
        srv->timer_started = false;
}

int lifecycle_set_end_at(struct server *srv, struct sandbox *s, int64_t end_at, bool extend_only)
{
        /* one change of endAt + record at a time, so that a rollback restores the value this
         * call replaced and not another call's (not op_lock: a snapshot holds that for long) */
        pthread_mutex_lock(&s->end_lock);
        int64_t old = sandbox_get_end_at(s);
        registry_set_end_at(srv->registry, s, end_at, extend_only);
        int r = sandbox_save(s);
        if (r == -ESRCH)
                r = 0;
        if (r < 0) {
                registry_set_end_at(srv->registry, s, old, false);
                log_warning_errno(r, "sandbox %s: saving record: %m; endAt left as it was", s->id);
        }
        pthread_mutex_unlock(&s->end_lock);
        return r;
}
