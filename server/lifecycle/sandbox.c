/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/sandbox.h"

#include "lifecycle/agent-log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "macros.h"

struct sandbox *sandbox_new(void)
{
        struct sandbox *s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->pidfd = -EBADF;
        s->slot = -1;
        s->refs = 1;
        pthread_mutex_init(&s->record_lock, NULL);
        pthread_mutex_init(&s->op_lock, NULL);
        pthread_mutex_init(&s->end_lock, NULL);
        pthread_mutex_init(&s->net_lock, NULL);
        return s;
}

struct sandbox *sandbox_ref(struct sandbox *s)
{
        if (s)
                __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
        return s;
}

void sandbox_unref(struct sandbox *s)
{
        if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return;
        safe_close(s->pidfd);
        agent_log_close(s->log);
        pthread_mutex_destroy(&s->record_lock);
        pthread_mutex_destroy(&s->op_lock);
        pthread_mutex_destroy(&s->end_lock);
        pthread_mutex_destroy(&s->net_lock);
        if (s->net)
                net_policy_done(s->net);
        free(s->net);
        cJSON_Delete(s->layers);
        free(s->upper_seed);
        cJSON_Delete(s->binds);
        cJSON_Delete(s->volume_mounts);
        free(s->metrics);
        cJSON_Delete(s->metadata);
        cJSON_Delete(s->env_vars);
        free(s->dir);
        free(s);
}

int64_t sandbox_get_end_at(const struct sandbox *s)
{
        return __atomic_load_n(&s->end_at, __ATOMIC_RELAXED);
}

void sandbox_set_end_at(struct sandbox *s, int64_t t)
{
        __atomic_store_n(&s->end_at, t, __ATOMIC_RELAXED);
}

bool sandbox_is_paused(const struct sandbox *s)
{
        return __atomic_load_n(&s->paused, __ATOMIC_ACQUIRE) != 0;
}

void sandbox_set_paused(struct sandbox *s, bool paused)
{
        __atomic_store_n(&s->paused, paused ? 1 : 0, __ATOMIC_RELEASE);
}

/* The last start stamped or read back: stamps only ever move forward from it. */
static int64_t last_started_us;

static void started_floor(int64_t us)
{
        int64_t cur = __atomic_load_n(&last_started_us, __ATOMIC_RELAXED);
        while (us > cur && !__atomic_compare_exchange_n(&last_started_us, &cur, us, true,
                                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                ;
}

void sandbox_set_started_now(struct sandbox *s)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
        int64_t cur = __atomic_load_n(&last_started_us, __ATOMIC_RELAXED), next;
        do
                next = now > cur ? now : cur + 1; /* two starts in one microsecond, a clock step */
        while (!__atomic_compare_exchange_n(&last_started_us, &cur, next, true, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED));
        s->started_us = next;
}

void sandbox_set_started_from_record(struct sandbox *s, const cJSON *record)
{
        const cJSON *us = cJSON_GetObjectItemCaseSensitive(record, "startedAtUs");
        const cJSON *sec = cJSON_GetObjectItemCaseSensitive(record, "startedAtUnix");
        /* both bounded well inside int64 (and exact in a double: below 2^53) */
        if (cJSON_IsNumber(us) && us->valuedouble >= 0 && us->valuedouble < 9e15)
                s->started_us = (int64_t)us->valuedouble;
        else if (cJSON_IsNumber(sec) && sec->valuedouble >= 0 && sec->valuedouble < 9e9)
                s->started_us = (int64_t)sec->valuedouble * 1000000;
        else
                s->started_us = 0;
        started_floor(s->started_us);
}

int rfc3339_format(int64_t t, char buf[static 32])
{
        struct tm tm;
        time_t tt = (time_t)t;
        if (!gmtime_r(&tt, &tm))
                return -EOVERFLOW;
        if (strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return -EOVERFLOW;
        return 0;
}

static void add_time(cJSON *o, const char *name, int64_t t)
{
        char buf[32];
        if (rfc3339_format(t, buf) >= 0)
                cJSON_AddStringToObject(o, name, buf);
        else
                cJSON_AddNullToObject(o, name);
}

static void add_map(cJSON *o, const char *name, const cJSON *m)
{
        cJSON *c = m ? cJSON_Duplicate(m, 1) : cJSON_CreateObject();
        if (c)
                cJSON_AddItemToObject(o, name, c);
}

/* E2B's SandboxVolumeMount list {name, path}; the record keeps volumeID too. Nothing when the
 * sandbox has none. */
static void add_mounts(cJSON *o, const cJSON *mounts, bool record)
{
        const cJSON *m;
        if (!cJSON_GetArraySize(mounts))
                return;
        cJSON *a = cJSON_AddArrayToObject(o, "volumeMounts");
        const cJSON *list = a ? mounts : NULL;
        cJSON_ArrayForEach(m, list)
        {
                cJSON *e = record ? cJSON_Duplicate(m, 1) : cJSON_CreateObject();
                if (!e)
                        continue;
                if (!record) {
                        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
                        const cJSON *path = cJSON_GetObjectItemCaseSensitive(m, "path");
                        cJSON_AddStringToObject(e, "name", cJSON_GetStringValue(name));
                        cJSON_AddStringToObject(e, "path", cJSON_GetStringValue(path));
                }
                cJSON_AddItemToArray(a, e);
        }
}

static void add_listed(cJSON *o, const struct sandbox *s)
{
        cJSON_AddStringToObject(o, "sandboxID", s->id);
        cJSON_AddStringToObject(o, "templateID", s->template_id);
        cJSON_AddStringToObject(o, "clientID", SBX_CLIENT_ID);
        cJSON_AddStringToObject(o, "alias", s->template_id);
        add_time(o, "startedAt", sandbox_started_s(s));
        add_time(o, "endAt", sandbox_get_end_at(s));
        cJSON_AddNumberToObject(o, "cpuCount", s->cpu_count);
        cJSON_AddNumberToObject(o, "memoryMB", s->memory_mb);
        cJSON_AddNumberToObject(o, "diskSizeMB", s->disk_mb);
        cJSON_AddStringToObject(o, "state", sandbox_is_paused(s) ? "paused" : "running");
        cJSON_AddStringToObject(o, "envdVersion", ENVD_VERSION);
        add_map(o, "metadata", s->metadata);
        add_mounts(o, s->volume_mounts, false);
}

static char *json_domain;

void sandbox_json_set_domain(const char *domain)
{
        free(json_domain);
        json_domain = domain ? strdup(domain) : NULL;
}

static void add_domain(cJSON *o)
{
        if (json_domain)
                cJSON_AddStringToObject(o, "domain", json_domain);
        else
                cJSON_AddNullToObject(o, "domain");
}

static void add_opt_string(cJSON *o, const char *name, const char *v)
{
        if (v[0])
                cJSON_AddStringToObject(o, name, v);
        else
                cJSON_AddNullToObject(o, name);
}

/* network's ingress fields, into the object add_net() may have made (egress lists). */
static void add_network(cJSON *o, const struct sandbox *s)
{
        cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "network");
        if (!n)
                n = cJSON_AddObjectToObject(o, "network");
        if (!n)
                return;
        cJSON_AddBoolToObject(n, "allowPublicTraffic", !s->traffic_token[0]);
        if (s->mask_host[0])
                cJSON_AddStringToObject(n, "maskRequestHost", s->mask_host);
}

void sandbox_set_net(struct sandbox *s, struct net_policy *net)
{
        pthread_mutex_lock(&s->net_lock);
        struct net_policy *old = s->net;
        s->net = net;
        pthread_mutex_unlock(&s->net_lock);
        if (old)
                net_policy_done(old);
        free(old);
}

int sandbox_get_net(struct sandbox *s, struct net_policy *ret)
{
        pthread_mutex_lock(&s->net_lock);
        int r = s->net ? net_policy_copy(s->net, ret) : 0;
        pthread_mutex_unlock(&s->net_lock);
        return r < 0 ? r : s->net != NULL;
}

bool sandbox_has_link(const struct sandbox *s)
{
        struct sandbox *m = (struct sandbox *)s; /* the lock only */
        pthread_mutex_lock(&m->net_lock);
        bool has = s->net != NULL;
        pthread_mutex_unlock(&m->net_lock);
        return has;
}

/* Record: "egress": {"internet", "allowOut", "denyOut", "rules"}; detail: allowInternetAccess and
 * network's lists (docs/e2b-wire.md "Egress"). */
static void add_net(cJSON *o, const struct sandbox *s, bool record)
{
        struct sandbox *m = (struct sandbox *)s; /* the lock only */
        pthread_mutex_lock(&m->net_lock);
        const struct net_policy *p = s->net;
        if (record && p) {
                cJSON *e = net_policy_record_json(p);
                if (e && !cJSON_AddItemToObject(o, "egress", e))
                        cJSON_Delete(e);
        } else if (!record) {
                cJSON_AddBoolToObject(o, "allowInternetAccess", p && p->internet > 0);
                cJSON *l = p && (p->n_allow || p->n_deny) ? net_policy_lists_json(p) : NULL;
                if (l)
                        cJSON_AddItemToObject(o, "network", l);
        }
        pthread_mutex_unlock(&m->net_lock);
}

int sandbox_net_from_record(const cJSON *record, struct net_policy **ret)
{
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(record, "egress");
        *ret = NULL;
        if (!e)
                return 0;
        struct net_policy *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        int r = net_policy_from_record(e, p);
        if (r < 0) {
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

cJSON *sandbox_to_json(const struct sandbox *s, enum sandbox_shape shape)
{
        cJSON *o = cJSON_CreateObject();
        if (!o)
                return NULL;
        switch (shape) {
        case SHAPE_SANDBOX:
                cJSON_AddStringToObject(o, "sandboxID", s->id);
                cJSON_AddStringToObject(o, "templateID", s->template_id);
                cJSON_AddStringToObject(o, "clientID", SBX_CLIENT_ID);
                cJSON_AddStringToObject(o, "envdVersion", ENVD_VERSION);
                cJSON_AddStringToObject(o, "envdAccessToken", s->token);
                add_opt_string(o, "trafficAccessToken", s->traffic_token);
                add_domain(o);
                cJSON_AddStringToObject(o, "alias", s->template_id);
                /* what the sandbox got, after --egress and --egress-max (not what it asked) */
                add_net(o, s, false);
                break;
        case SHAPE_LISTED:
                add_listed(o, s);
                break;
        case SHAPE_DETAIL: {
                add_listed(o, s);
                cJSON_AddStringToObject(o, "envdAccessToken", s->token);
                add_domain(o);
                add_net(o, s, false);
                add_network(o, s);
                cJSON *l = cJSON_AddObjectToObject(o, "lifecycle");
                if (l) {
                        cJSON_AddBoolToObject(l, "autoResume", s->auto_resume);
                        cJSON_AddStringToObject(l, "onTimeout", s->auto_pause ? "pause" : "kill");
                }
                break;
        }
        case SHAPE_RECORD:
                cJSON_AddNumberToObject(o, "version", 1);
                cJSON_AddStringToObject(o, "sandboxID", s->id);
                cJSON_AddStringToObject(o, "templateID", s->template_id);
                cJSON_AddStringToObject(o, "envdAccessToken", s->token);
                cJSON_AddNumberToObject(o, "pid", s->pid);
                cJSON_AddNumberToObject(o, "uidSlot", s->slot);
                add_time(o, "startedAt", sandbox_started_s(s));
                add_time(o, "endAt", sandbox_get_end_at(s));
                cJSON_AddNumberToObject(o, "startedAtUnix", (double)sandbox_started_s(s));
                cJSON_AddNumberToObject(o, "startedAtUs", (double)s->started_us);
                cJSON_AddNumberToObject(o, "endAtUnix", (double)sandbox_get_end_at(s));
                cJSON_AddNumberToObject(o, "cpuCount", s->cpu_count);
                cJSON_AddNumberToObject(o, "memoryMB", s->memory_mb);
                cJSON_AddNumberToObject(o, "diskSizeMB", s->disk_mb);
                add_map(o, "metadata", s->metadata);
                add_map(o, "envVars", s->env_vars);
                cJSON_AddStringToObject(o, "state", sandbox_is_paused(s) ? "paused" : "running");
                cJSON_AddBoolToObject(o, "persisted", s->persisted);
                cJSON_AddNumberToObject(o, "pausedAtUnix", (double)s->paused_at);
                cJSON_AddBoolToObject(o, "autoPause", s->auto_pause);
                cJSON_AddBoolToObject(o, "autoPauseMemory", !s->pause_drops_memory);
                cJSON_AddBoolToObject(o, "autoResume", s->auto_resume);
                cJSON_AddNumberToObject(o, "timeoutSeconds", (double)s->timeout_s);
                add_opt_string(o, "trafficAccessToken", s->traffic_token);
                add_opt_string(o, "maskRequestHost", s->mask_host);
                cJSON_AddBoolToObject(o, "pool", s->pool);
                if (s->layers)
                        cJSON_AddItemToObject(o, "layers", cJSON_Duplicate(s->layers, 1));
                if (s->binds)
                        cJSON_AddItemToObject(o, "binds", cJSON_Duplicate(s->binds, 1));
                add_mounts(o, s->volume_mounts, true);
                add_net(o, s, true);
                break;
        }
        return o;
}

int sandbox_metadata_matches(const struct sandbox *s, const cJSON *filter)
{
        const cJSON *f;
        cJSON_ArrayForEach(f, filter)
        {
                const cJSON *v =
                    s->metadata ? cJSON_GetObjectItemCaseSensitive(s->metadata, f->string) : NULL;
                if (!cJSON_IsString(v) || !cJSON_IsString(f) ||
                    strcmp(v->valuestring, f->valuestring) != 0)
                        return 0;
        }
        return 1;
}

void sandbox_mark_gone(struct sandbox *s)
{
        pthread_mutex_lock(&s->record_lock);
        s->gone = true;
        pthread_mutex_unlock(&s->record_lock);
}

static int save_locked(const struct sandbox *s)
{
        char path[4096];
        if ((size_t)snprintf(path, sizeof(path), "%s/sandbox.json", s->dir) >= sizeof(path))
                return -ENAMETOOLONG;
        cJSON *j = sandbox_to_json(s, SHAPE_RECORD);
        _cleanup_free_ char *text = j ? cJSON_Print(j) : NULL;
        cJSON_Delete(j);
        if (!text)
                return -ENOMEM;
        size_t len = strlen(text);
        char *line = realloc(text, len + 2); /* a line: ends with '\n' */
        if (!line)
                return -ENOMEM;
        text = line;
        text[len] = '\n';
        return write_file_atomic(path, text, len + 1, 0600);
}

int sandbox_save(struct sandbox *s)
{
        pthread_mutex_lock(&s->record_lock);
        int r = s->gone ? -ESRCH : save_locked(s);
        pthread_mutex_unlock(&s->record_lock);
        return r;
}
