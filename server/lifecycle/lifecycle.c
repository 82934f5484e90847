/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/lifecycle.h"

#include "core/cluster-hooks.h"
#include "lifecycle/agent-log.h"
#include "lifecycle/start-cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "channel/agent-client.h"
#include "channel/agent-connect.h"
#include "jail-egress.h"
#include "lifecycle/jail-spawn.h"
#include "storage/layer-store.h"
#include "log.h"
#include "macros.h"
#include "missing-syscalls.h"
#include <sys/pidfd.h>
#include "random-util.h"
#include "core/stats.h"
#include "lifecycle/teardown.h"
#include "lifecycle/upper.h"
#include "lifecycle/volume-mounts.h"
#include "storage/disk-image.h"
#include "storage/disk-pool.h"
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

/* Names the dynamic loader and libc act on at start-up. A template's environment (an image's
 * Env, a build's ENV steps: anyone with an API key writes it) reaches the sandbox's processes
 * through /init, but never the agent's own exec: LD_PRELOAD or GLIBC_TUNABLES (CVE-2023-4911)
 * there would run user code with the agent's capabilities inside the sandbox. */
static bool loader_env(const char *name)
{
        static const char *const prefixes[] = {"LD_",        "GCONV_PATH", "GLIBC_TUNABLES",
                                               "MALLOC_",    "LOCPATH",    "HOSTALIASES",
                                               "RES_OPTIONS"};
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        return false;
}

/* The template's environment (but loader_env() names), plus a PATH when it has none. */
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
                if (loader_env(e->string))
                        continue;
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
            (srv->runtime_ok && !(spec->runtime = strdup(srv->config->runtime))) ||
            asprintf(&spec->cgroup, "%s/%s", CGROUP_PARENT, s->id) < 0)
                return -ENOMEM;
        if ((r = spec_layers(s->layers ? s->layers : t->layers, spec, ret_msg)) < 0 ||
            (r = spec_binds(s->binds ? s->binds : t->binds, spec, ret_msg)) < 0)
                return r;
        if ((r = volume_mounts_spec(srv, s, spec)) < 0) {
                *ret_msg = "volumeMounts: not of the spec's types";
                return r;
        }
        spec->uid_base = registry_uid_base(s->slot);
        spec->uid_count = UID_SLOT_SIZE;
        spec->memory_bytes = (uint64_t)s->memory_mb * 1024 * 1024;
        spec->pids_max = SANDBOX_PIDS_MAX;
        spec->cpu_quota_us = (int64_t)s->cpu_count * CPU_PERIOD_US;
        spec->cpu_period_us = CPU_PERIOD_US;
        spec->disk_bytes = (uint64_t)s->disk_mb * 1024 * 1024;
        if (srv->disk_pool && disk_pool_has_upper(srv->disk_pool, s->id)) {
                /* a subvolume of the pool: visible to sbxd there, mounted nowhere on the host */
                char path[4096];
                if ((r = disk_pool_upper_path(srv->disk_pool, s->id, path, sizeof(path))) < 0)
                        return r;
                if (!(spec->upper_subvol = strdup(path)))
                        return -ENOMEM;
        } else {
                /* the upper's file system is visible at <dir>/rootfs on the host: snapshots
                 * read it */
                spec->upper_on_host = true;
                if (srv->disk_images &&
                    asprintf(&spec->disk_image, "%s/" DISK_IMAGE_NAME, s->dir) < 0)
                        return -ENOMEM;
        }
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

/* The variables that point common clients at the CA bundle of a sandbox with a link, which
 * the jailer appends the sandboxes' CA to (server/egress/README.md "Credentials"): Node.js,
 * Python's requests and pip, OpenSSL-based clients that honour SSL_CERT_FILE (httpx, certifi
 * users), curl. Under the template's and the sandbox's own variables: a value set there wins. */
static const char *const CA_ENV_VARS[] = {"NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
                                          "SSL_CERT_FILE", "PIP_CERT", "CURL_CA_BUNDLE"};

static void add_ca_env(cJSON *env)
{
        for (size_t i = 0; i < ELEMENTSOF(CA_ENV_VARS); i++)
                if (!cJSON_GetObjectItemCaseSensitive(env, CA_ENV_VARS[i]))
                        cJSON_AddStringToObject(env, CA_ENV_VARS[i], SBX_JAIL_CA_BUNDLE);
}

int lifecycle_init_agent(const struct sandbox *s, const struct template_info *t)
{
        cJSON *j = cJSON_CreateObject();
        if (!j)
                return -ENOMEM;
        /* The template's environment (an image's Env) under the sandbox's own env vars. */
        cJSON *env = t->env ? cJSON_Duplicate(t->env, 1) : cJSON_CreateObject(), *e;
        cJSON_ArrayForEach(e, s->env_vars)
        {
                if (!env || !e->string)
                        continue;
                cJSON_DeleteItemFromObjectCaseSensitive(env, e->string);
                cJSON_AddItemToObject(env, e->string, cJSON_Duplicate(e, 1));
        }
        if (env && sandbox_has_link(s))
                add_ca_env(env);
        cJSON_AddItemToObject(j, "envVars", env);
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

struct net_rules_args {
        struct server *srv;
        struct sandbox *s;
        char *errmsg;
        size_t errlen;
};

static int net_rules(void *arg)
{
        struct net_rules_args *a = arg;
        return lifecycle_net_rules(a->srv, a->s, a->errmsg, a->errlen);
}

/* Steps after the slot and dir exist; on failure the caller tears down. */
static int start(struct server *srv, struct sandbox *s, const struct template_info *t, char *errmsg,
                 size_t errlen)
{
        int r;
        _cleanup_jail_spec_ struct sbx_jail_spec *spec = NULL;
        const char *why = NULL;
        log_context_set_sandbox(s->id); /* this thread's lines are about it from now on */
        r = lifecycle_jail_spec(srv, s, t, &spec, &why);
        if (r == -EINVAL) {
                snprintf(errmsg, errlen, "sandbox start failed at jail-spec: %s", why);
                log_error("sandbox %s: cannot build its jail spec: %s", s->id, why);
                return -EIO;
        }
        if (r < 0)
                return r;
        if ((r = lifecycle_net_link(srv, s, spec)) < 0)
                return r;
        struct jail_result jr;
        char log_path[4096], fifo[4096];
        snprintf(log_path, sizeof(log_path), "%s/%s", s->dir, SANDBOX_LOG_NAME);
        /* the jailer's stderr, then the agent's: a FIFO sbxd drains, bounded (agent-log.h) */
        agent_log_close(TAKE_PTR(s->log));
        int lr = agent_log_open(s->dir, &s->log, fifo, sizeof(fifo));
        if (lr < 0) {
                snprintf(errmsg, errlen, "sandbox start failed at agent-log: %s", strerror(-lr));
                return log_error_errno(lr, "sandbox %s: the agent's log: %m", s->id);
        }
        /* the egress rules go in while the jailer works (they take a ms or two) */
        struct net_rules_args na = {srv, s, errmsg, errlen};
        int net_r;
        r = jail_spawn_during(srv->config->jailer, fifo, spec, r > 0 ? net_rules : NULL, &na,
                              &net_r, &jr);
        if (r >= 0 && jr.ok && net_r < 0)
                return -EIO; /* its message is in errmsg; the caller tears down */
        if (r < 0 || !jr.ok) {
                char tail[1024];
                agent_log_flush(s->log);
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
                char tail[1024];
                snprintf(errmsg, errlen, "sandbox start failed at agent-init: %s", strerror(-r));
                log_error_errno(r, "sandbox %s: agent /init failed: %m; its log: %s", s->id,
                                log_tail(log_path, tail, sizeof(tail)));
                return -EIO;
        }
        r = lifecycle_start_cmd(s, t, errmsg, errlen);
        if (r < 0)
                return -EIO;
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
        s->traffic_token[0] = 0;
        if (p->private_traffic) {
                int r = random_hex(s->traffic_token, TOKEN_HEX_BYTES);
                if (r < 0)
                        return r;
        }
        snprintf(s->mask_host, sizeof(s->mask_host), "%s", p->mask_host);
        sandbox_set_started_now(s);
        sandbox_set_end_at(s, sandbox_started_s(s) + p->timeout_s);
        return 0;
}

int lifecycle_load_template(struct server *srv, const char *name, struct template_info *t,
                            char *errmsg, size_t errlen)
{
        int r = template_load(srv->config->state_dir, name, t);
        /* --cluster: a template another node has is pulled here first (cluster/layer-pull.h) */
        if (r == -ENOENT && srv->cluster_hooks) {
                int p = srv->cluster_hooks->pull_template(srv, name, errmsg, errlen);
                if (p < 0 && p != -ENOENT)
                        return -EIO;
                if (p >= 0)
                        r = template_load(srv->config->state_dir, name, t);
        }
        if (r == -ENOENT && templates_building(srv->config->state_dir)) {
                snprintf(errmsg, errlen,
                         "template '%s' is being built (the templates are built after sbx is "
                         "installed or upgraded); retry in a minute",
                         name);
                return -EAGAIN;
        }
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
        if (srv->disk_pool) {
                errmsg[0] = 0;
                r = lifecycle_upper_make(srv, s, errmsg, errlen);
                if (r < 0) {
                        if (!errmsg[0])
                                snprintf(errmsg, errlen, "sandbox start failed at its disk: %s",
                                         strerror(-r));
                        return r;
                }
        } else if (s->upper_seed) {
                snprintf(errmsg, errlen,
                         "this snapshot lives in the storage pool, which this server runs "
                         "without (--disk)");
                return -EIO;
        } else if (srv->disk_images) {
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

void lifecycle_destroy(struct server *srv, struct sandbox *s, const char *why)
{
        if (!s)
                return;
        sandbox_mark_gone(s); /* a concurrent timeout/connect must not write into the dir */
        agent_log_close(TAKE_PTR(s->log));
        /* no id yet: nothing of it exists on the host (an empty id would name the parent
         * cgroup, every sandbox's) */
        int r = s->id[0] ? teardown_sandbox(s->id, s->pid, s->pidfd, s->dir) : 0;
        if (srv->disk_pool && s->id[0]) { /* after its processes: nothing writes there any more */
                int u = disk_pool_upper_remove(srv->disk_pool, s->id);
                if (u < 0 && r >= 0)
                        r = u;
        }
        lifecycle_net_remove(srv, s);
        if (r < 0)
                log_error_errno(r, "sandbox %s: teardown (%s) incomplete: %m", s->id, why);
        else
                log_info("sandbox %s: removed (%s)", s->id, why);
        /* its processes are gone with their mount namespace and its binds of the volumes */
        volume_mounts_release(srv, s);
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
