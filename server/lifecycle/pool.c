/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/pool.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "lifecycle/lifecycle.h"
#include "lifecycle/monitor.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"
#include "core/server.h"
#include "storage/template.h"
#include "time-util.h"

#define POOL_MAX_TEMPLATES 8
/* After this many failed fills in a row a template waits POOL_RETRY_MS before the next try (a
 * full state disk, a broken template): the pool recovers once the cause is gone. */
#define POOL_MAX_FAILURES 3
#define POOL_RETRY_MS     30000

struct member {
        struct sandbox *s;
        struct timespec stamp; /* template.json mtime when started */
        ino_t ino;
};

struct pool_tpl {
        char name[TEMPLATE_NAME_MAX + 1];
        struct member *m; /* size entries */
        size_t n;
        unsigned failures; /* consecutive failed fills: back off */
        int64_t retry_ms;  /* now_ms() before which a backed-off template is not filled */
};

struct pool {
        struct server *srv;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_t thread;
        bool stop;
        unsigned size;
        struct pool_tpl tpl[POOL_MAX_TEMPLATES];
        size_t n_tpl;
};

static int template_stamp(struct server *srv, const char *name, struct timespec *ts, ino_t *ino)
{
        char path[4096];
        struct stat st;
        snprintf(path, sizeof(path), "%s/templates/%s/template.json", srv->config->state_dir, name);
        if (stat(path, &st) < 0)
                return -errno;
        *ts = st.st_mtim;
        *ino = st.st_ino;
        return 0;
}

static bool agent_alive(const struct sandbox *s)
{
        struct pollfd p = {.fd = s->pidfd, .events = POLLIN};
        return s->pidfd >= 0 && poll(&p, 1, 0) == 0;
}

/* Start one member of template tp (outside the lock). */
static int fill_one(struct pool *p, const char *name, struct member *ret)
{
        char err[512] = "";
        struct template_info t = {};
        struct member m = {};
        int r = template_stamp(p->srv, name, &m.stamp, &m.ino);
        if (r >= 0)
                r = lifecycle_load_template(p->srv, name, &t, err, sizeof(err));
        if (r < 0)
                return r;
        struct sandbox *s = sandbox_new();
        r = s ? registry_slot_acquire(p->srv->registry, &s->slot) : -ENOMEM;
        if (r >= 0)
                r = lifecycle_new_identity(s);
        if (r >= 0) {
                snprintf(s->template_id, sizeof(s->template_id), "%s", name);
                s->cpu_count = t.cpu_count;
                s->memory_mb = t.memory_mb;
                s->disk_mb = t.disk_mb;
                s->pool = true;
                sandbox_set_started_now(s);
                if (!(s->layers = cJSON_Duplicate(t.layers, 1)) ||
                    !(s->binds = cJSON_Duplicate(t.binds, 1)) ||
                    (t.upper_seed && !(s->upper_seed = strdup(t.upper_seed))))
                        r = -ENOMEM;
        }
        if (r >= 0)
                r = lifecycle_spawn(p->srv, s, &t, err, sizeof(err));
        template_done(&t);
        if (r < 0) {
                log_warning_errno(r, "pool: starting a %s sandbox: %s: %m", name, err);
                if (s && s->slot >= 0)
                        lifecycle_destroy(p->srv, s, "pool start failed");
                else
                        sandbox_unref(s);
                return r;
        }
        m.s = s;
        *ret = m;
        return 0;
}

/* The template most in need of a member, or NULL; *ret_wake_ms is the earliest retry of a
 * backed-off template (0: none). Under lock. */
static struct pool_tpl *neediest(struct pool *p, int64_t *ret_wake_ms)
{
        struct pool_tpl *best = NULL;
        int64_t now = now_ms();
        *ret_wake_ms = 0;
        for (size_t i = 0; i < p->n_tpl; i++) {
                struct pool_tpl *t = &p->tpl[i];
                if (t->n >= p->size)
                        continue;
                if (t->failures >= POOL_MAX_FAILURES && now < t->retry_ms) {
                        if (!*ret_wake_ms || t->retry_ms < *ret_wake_ms)
                                *ret_wake_ms = t->retry_ms;
                        continue;
                }
                if (!best || t->n < best->n)
                        best = t;
        }
        return best;
}

static void *pool_main(void *arg)
{
        struct pool *p = arg;
        pthread_mutex_lock(&p->lock);
        while (!p->stop) {
                int64_t wake;
                struct pool_tpl *t = neediest(p, &wake);
                if (!t && wake) {
                        /* on the cond's clock */
                        struct timespec ts = timespec_in_ms(CLOCK_REALTIME, wake - now_ms());
                        pthread_cond_timedwait(&p->cond, &p->lock, &ts);
                        continue;
                }
                if (!t) {
                        pthread_cond_wait(&p->cond, &p->lock);
                        continue;
                }
                char name[sizeof(t->name)];
                memcpy(name, t->name, sizeof(name));
                pthread_mutex_unlock(&p->lock);
                struct member m = {};
                int r = fill_one(p, name, &m);
                log_context_set(NULL, NULL);
                pthread_mutex_lock(&p->lock);
                if (r < 0) {
                        if (++t->failures >= POOL_MAX_FAILURES)
                                t->retry_ms = now_ms() + POOL_RETRY_MS;
                        continue;
                }
                t->failures = 0;
                if (p->stop || t->n >= p->size) {
                        pthread_mutex_unlock(&p->lock);
                        lifecycle_destroy(p->srv, m.s, "pool full");
                        pthread_mutex_lock(&p->lock);
                        continue;
                }
                t->m[t->n++] = m;
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

int pool_start(struct server *srv, struct pool **ret)
{
        *ret = NULL;
        if (srv->config->pool_size == 0)
                return 0;
        struct pool *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->srv = srv;
        p->size = srv->config->pool_size;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        _cleanup_free_ char *names = strdup(srv->config->pool_templates);
        char *save = NULL;
        for (char *n = names ? strtok_r(names, ",", &save) : NULL;
             n && p->n_tpl < POOL_MAX_TEMPLATES; n = strtok_r(NULL, ",", &save)) {
                if (!template_name_valid(n))
                        continue;
                struct pool_tpl *t = &p->tpl[p->n_tpl];
                t->m = calloc(p->size, sizeof(*t->m));
                if (!t->m)
                        continue;
                snprintf(t->name, sizeof(t->name), "%s", n);
                p->n_tpl++;
        }
        int r = pthread_create(&p->thread, NULL, pool_main, p);
        if (r != 0) {
                for (size_t i = 0; i < p->n_tpl; i++)
                        free(p->tpl[i].m);
                free(p);
                return -r;
        }
        *ret = p;
        return 0;
}

void pool_stop(struct pool *p)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
        for (size_t i = 0; i < p->n_tpl; i++) {
                for (size_t k = 0; k < p->tpl[i].n; k++)
                        lifecycle_destroy(p->srv, p->tpl[i].m[k].s, "pool shutdown");
                free(p->tpl[i].m);
        }
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p);
}

size_t pool_count(struct pool *p)
{
        size_t n = 0;
        pthread_mutex_lock(&p->lock);
        for (size_t i = 0; i < p->n_tpl; i++)
                n += p->tpl[i].n;
        pthread_mutex_unlock(&p->lock);
        return n;
}

/* Pop a member of template name, or NULL. The refill thread is woken by the caller. */
static bool pop(struct pool *p, const char *name, struct member *ret)
{
        bool found = false;
        pthread_mutex_lock(&p->lock);
        for (size_t i = 0; i < p->n_tpl && !found; i++) {
                struct pool_tpl *t = &p->tpl[i];
                if (strcmp(t->name, name) != 0 || t->n == 0)
                        continue;
                *ret = t->m[--t->n]; /* newest first */
                found = true;
        }
        pthread_mutex_unlock(&p->lock);
        return found;
}

/* The refill thread starts a replacement (a cold start: disk image, jailer, a durable record).
 * Woken once the taken member is handed over, not when it is popped: on a small machine the
 * refill otherwise competes with the handover it follows for the CPU and for the state disk's
 * journal (the handover's record fsync waits on the refill's image allocation), which cost a
 * warm-pool create a few ms. */
static void wake_refill(struct pool *p)
{
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
}

/* Hand a member over to the request: new token, env, metadata, timeout; /init; record. */
static int adopt_member(struct pool *p, struct sandbox *s, const struct create_params *params)
{
        struct template_info t = {};
        char err[256];
        int r = lifecycle_load_template(p->srv, s->template_id, &t, err, sizeof(err));
        if (r >= 0)
                r = random_hex(s->token, TOKEN_HEX_BYTES);
        if (r >= 0)
                r = lifecycle_apply_params(s, params);
        if (r >= 0) {
                s->pool = false;
                r = lifecycle_init_agent(s, &t);
        }
        template_done(&t);
        if (r >= 0)
                r = sandbox_save(s);
        if (r >= 0)
                r = monitor_register(p->srv, s);
        return r;
}

int pool_take(struct pool *p, const struct create_params *params, struct sandbox **ret)
{
        struct member m;
        while (pop(p, params->template_id, &m)) {
                struct timespec ts;
                ino_t ino;
                int r = template_stamp(p->srv, params->template_id, &ts, &ino);
                bool fresh = r >= 0 && ino == m.ino && ts.tv_sec == m.stamp.tv_sec &&
                             ts.tv_nsec == m.stamp.tv_nsec;
                if (fresh && agent_alive(m.s) && adopt_member(p, m.s, params) >= 0) {
                        wake_refill(p);
                        *ret = m.s;
                        return 0;
                }
                lifecycle_destroy(p->srv, m.s, fresh ? "pool member unusable" : "template changed");
        }
        wake_refill(p);
        return -ENOENT;
}
