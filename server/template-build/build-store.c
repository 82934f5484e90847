/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The build records (server/template-build/README.md "State"), the build logs, publishing a
 * finished build as sbx templates, and the service's queue and workers.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "template-build/build-mirrors.h"
#include "template-build/build-internal.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "storage/json-record.h"
#include "storage/layer-store.h"

#define RECORD_MAX (4 * 1024 * 1024)

void build_now(char buf[static 32])
{
        struct timeval tv;
        struct tm tm;
        gettimeofday(&tv, NULL);
        gmtime_r(&tv.tv_sec, &tm);
        size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, 32 - n, ".%03dZ", (int)(tv.tv_usec / 1000));
}

int brec_dir(struct build_service *b, const char *sub, char *buf, size_t size)
{
        char top[4096];
        snprintf(top, sizeof(top), "%s/build", b->state);
        if (mkdir(top, 0700) < 0 && errno != EEXIST)
                return -errno;
        if ((size_t)snprintf(buf, size, "%s/%s", top, sub) >= size)
                return -ENAMETOOLONG;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

cJSON *brec_read(struct build_service *b, const char *kind, const char *id)
{
        char dir[4096], path[4200];
        if (brec_dir(b, kind, dir, sizeof(dir)) < 0)
                return NULL;
        snprintf(path, sizeof(path), "%s/%s.json", dir, id);
        return json_file_read(path, RECORD_MAX);
}

int brec_write(struct build_service *b, const char *kind, const char *id, const cJSON *j)
{
        char dir[4096], path[4200];
        int r = brec_dir(b, kind, dir, sizeof(dir));
        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "%s/%s.json", dir, id);
        _cleanup_free_ char *text = cJSON_Print(j);
        if (!text)
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text), 0600);
}

bool brec_file_id(const char *name, char id[static BUILD_TEMPLATE_ID_MAX])
{
        size_t l = strlen(name);
        if (l < 6 || l - 5 >= BUILD_TEMPLATE_ID_MAX || strcmp(name + l - 5, ".json") != 0)
                return false;
        memcpy(id, name, l - 5);
        id[l - 5] = 0;
        return true;
}

void brec_remove_build(struct build_service *b, const char *bid)
{
        char dir[4096], path[4300];
        if (brec_dir(b, REC_BUILDS, dir, sizeof(dir)) >= 0) {
                snprintf(path, sizeof(path), "%s/%s.json", dir, bid);
                (void)unlink(path);
        }
        if (brec_dir(b, "logs", dir, sizeof(dir)) >= 0) {
                snprintf(path, sizeof(path), "%s/%s.log", dir, bid);
                (void)unlink(path);
        }
}

static bool has_string(const cJSON *a, const char *s)
{
        const cJSON *x;
        cJSON_ArrayForEach(x,
                           a) if (cJSON_IsString(x) && strcmp(x->valuestring, s) == 0) return true;
        return false;
}

int brec_resolve(struct build_service *b, const char *ref, char ret_tid[BUILD_TEMPLATE_ID_MAX],
                 char ret_tag[BUILD_TAG_MAX + 1])
{
        char name[TEMPLATE_NAME_MAX + 2], dir[4096];
        if (strlen(ref) >= sizeof(name))
                return -ENOENT;
        snprintf(name, sizeof(name), "%s", ref);
        char *colon = strchr(name, ':');
        if (colon) {
                *colon = 0;
                if (strlen(colon + 1) > BUILD_TAG_MAX)
                        return -ENOENT;
                build_tag_lower(colon + 1);
        }
        if (!*name || strlen(name) >= sizeof(name) - 1 || strchr(name, '/') || strchr(name, '.'))
                return -ENOENT;
        _cleanup_json_ cJSON *direct = brec_read(b, REC_TEMPLATES, name);
        int r = -ENOENT;
        if (direct && strlen(name) < BUILD_TEMPLATE_ID_MAX) {
                memcpy(ret_tid, name, strlen(name) + 1);
                r = 0;
        }
        if (r < 0 && brec_dir(b, REC_TEMPLATES, dir, sizeof(dir)) >= 0) {
                DIR *d = opendir(dir);
                struct dirent *de;
                char id[BUILD_TEMPLATE_ID_MAX];
                while (d && r < 0 && (de = readdir(d))) {
                        if (!brec_file_id(de->d_name, id))
                                continue;
                        _cleanup_json_ cJSON *t = brec_read(b, REC_TEMPLATES, id);
                        if (has_string(cJSON_GetObjectItemCaseSensitive(t, "names"), name)) {
                                memcpy(ret_tid, id, strlen(id) + 1);
                                r = 0;
                        }
                }
                if (d)
                        closedir(d);
        }
        if (r >= 0)
                snprintf(ret_tag, BUILD_TAG_MAX + 1, "%s", colon ? colon + 1 : "");
        return r;
}

/* The sbx template names a tag of t publishes under: "<id>[:tag]" and "<alias>[:tag]". */
static size_t tag_names(const cJSON *t, const char *tag, char out[][TEMPLATE_NAME_MAX + 1],
                        size_t max)
{
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(t, "templateID"), *n;
        size_t k = 0;
        bool plain = strcmp(tag, "default") == 0;
        if (cJSON_IsString(id) && k < max)
                snprintf(out[k++], TEMPLATE_NAME_MAX + 1, "%s%s%s", id->valuestring,
                         plain ? "" : ":", plain ? "" : tag);
        cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(t, "names"))
        {
                if (cJSON_IsString(n) && k < max)
                        snprintf(out[k++], TEMPLATE_NAME_MAX + 1, "%s%s%s", n->valuestring,
                                 plain ? "" : ":", plain ? "" : tag);
        }
        return k;
}

static int write_template_json(struct build_service *b, const char *name, const cJSON *tpl)
{
        char dir[4096], path[4200];
        snprintf(dir, sizeof(dir), "%s/templates", b->state);
        (void)mkdir(dir, 0755);
        snprintf(dir, sizeof(dir), "%s/templates/%s", b->state, name);
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        snprintf(path, sizeof(path), "%s/template.json", dir);
        _cleanup_free_ char *text = cJSON_Print(tpl);
        if (!text)
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text), 0644);
}

int brec_publish(struct build_service *b, const cJSON *t, const char *bid, const cJSON *tpl)
{
        const cJSON *tags = cJSON_GetObjectItemCaseSensitive(t, "tags"), *e;
        char names[8][TEMPLATE_NAME_MAX + 1];
        int r = 0;
        cJSON_ArrayForEach(e, tags)
        {
                const cJSON *eb = cJSON_GetObjectItemCaseSensitive(e, "buildID");
                if (!cJSON_IsString(eb) || strcmp(eb->valuestring, bid) != 0)
                        continue;
                size_t n = tag_names(t, e->string, names, ELEMENTSOF(names));
                for (size_t i = 0; i < n && r >= 0; i++)
                        r = write_template_json(b, names[i], tpl);
        }
        return r;
}

void brec_unpublish_tag(struct build_service *b, const cJSON *t, const char *tag)
{
        char names[8][TEMPLATE_NAME_MAX + 1], dir[4096];
        size_t n = tag_names(t, tag, names, ELEMENTSOF(names));
        for (size_t i = 0; i < n; i++) {
                snprintf(dir, sizeof(dir), "%s/templates/%s", b->state, names[i]);
                rm_rf(dir);
        }
}

/* ---- logs: <state>/build/logs/<bid>.log, one JSON entry a line ---- */

static int log_path(struct build_service *b, const char *bid, char *buf, size_t size)
{
        char dir[4096];
        int r = brec_dir(b, "logs", dir, sizeof(dir));
        if (r >= 0 && (size_t)snprintf(buf, size, "%s/%s.log", dir, bid) >= size)
                r = -ENAMETOOLONG;
        return r;
}

void build_log(struct build_service *b, const char *bid, const char *step, const char *level,
               const char *fmt, ...)
{
        char msg[BUILD_MAX_LOG_LINE], ts[32], path[4300];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        build_now(ts);
        _cleanup_json_ cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "timestamp", ts);
        cJSON_AddStringToObject(e, "level", level);
        cJSON_AddStringToObject(e, "message", msg);
        if (step)
                cJSON_AddStringToObject(e, "step", step);
        _cleanup_free_ char *line = cJSON_PrintUnformatted(e);
        if (!line)
                return;
        pthread_mutex_lock(&b->lock);
        if (log_path(b, bid, path, sizeof(path)) >= 0) {
                int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd >= 0) {
                        dprintf(fd, "%s\n", line);
                        close(fd);
                }
        }
        pthread_mutex_unlock(&b->lock);
}

int brec_log_read(struct build_service *b, const char *bid, size_t offset, cJSON *out)
{
        char path[4300];
        int r = log_path(b, bid, path, sizeof(path));
        if (r < 0)
                return r;
        FILE *f = fopen(path, "re");
        if (!f)
                return errno == ENOENT ? 0 : -errno;
        char line[BUILD_MAX_LOG_LINE * 2 + 512];
        size_t i = 0, added = 0;
        while (added < BUILD_LOG_PAGE && fgets(line, sizeof(line), f)) {
                if (i++ < offset)
                        continue;
                cJSON *e = cJSON_Parse(line);
                if (e) {
                        cJSON_AddItemToArray(out, e);
                        added++;
                }
        }
        fclose(f);
        return 0;
}

void build_finish(struct build_service *b, const char *bid, const char *status, const char *message,
                  const char *step)
{
        char ts[32];
        build_now(ts);
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *rec = brec_read(b, REC_BUILDS, bid);
        if (rec) {
                static const char *const drop[] = {"status", "finishedAt", "updatedAt", "reason"};
                for (size_t i = 0; i < ELEMENTSOF(drop); i++)
                        cJSON_DeleteItemFromObjectCaseSensitive(rec, drop[i]);
                cJSON_AddStringToObject(rec, "status", status);
                cJSON_AddStringToObject(rec, "finishedAt", ts);
                cJSON_AddStringToObject(rec, "updatedAt", ts);
                if (message) {
                        cJSON *reason = cJSON_AddObjectToObject(rec, "reason");
                        cJSON_AddStringToObject(reason, "message", message);
                        if (step)
                                cJSON_AddStringToObject(reason, "step", step);
                }
                (void)brec_write(b, REC_BUILDS, bid, rec);
        }
        pthread_mutex_unlock(&b->lock);
}

/* ---- the queue and its workers ---- */

int build_enqueue(struct build_service *b, const char *bid)
{
        if (b->q_len >= BUILD_MAX_QUEUED)
                return -EDQUOT;
        snprintf(b->queue[(b->q_head + b->q_len) % BUILD_MAX_QUEUED], BUILD_ID_MAX, "%s", bid);
        b->q_len++;
        pthread_cond_signal(&b->cond);
        return 0;
}

static void *worker_main(void *arg)
{
        struct build_service *b = arg;
        char bid[BUILD_ID_MAX];
        for (;;) {
                pthread_mutex_lock(&b->lock);
                while (!b->stopping && b->q_len == 0)
                        pthread_cond_wait(&b->cond, &b->lock);
                if (b->stopping) {
                        pthread_mutex_unlock(&b->lock);
                        return NULL;
                }
                memcpy(bid, b->queue[b->q_head], BUILD_ID_MAX);
                b->q_head = (b->q_head + 1) % BUILD_MAX_QUEUED;
                b->q_len--;
                pthread_mutex_unlock(&b->lock);
                build_run(b, bid);
        }
}

/* A build that was queued or running when sbxd stopped will not go on: say so. */
static void recover(struct build_service *b)
{
        char dir[4096];
        if (brec_dir(b, REC_BUILDS, dir, sizeof(dir)) < 0)
                return;
        DIR *d = opendir(dir);
        struct dirent *de;
        while (d && (de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (l < 6 || l - 5 >= BUILD_ID_MAX || strcmp(de->d_name + l - 5, ".json") != 0)
                        continue;
                char bid[BUILD_ID_MAX];
                memcpy(bid, de->d_name, l - 5);
                bid[l - 5] = 0;
                _cleanup_json_ cJSON *rec = brec_read(b, REC_BUILDS, bid);
                const cJSON *st = cJSON_GetObjectItemCaseSensitive(rec, "status");
                bool triggered = cJSON_GetObjectItemCaseSensitive(rec, "spec") != NULL;
                if (!cJSON_IsString(st) || !triggered ||
                    (strcmp(st->valuestring, "building") != 0 &&
                     strcmp(st->valuestring, "waiting") != 0))
                        continue;
                build_log(b, bid, NULL, "error", "sbxd stopped while this build was %s",
                          st->valuestring);
                build_finish(b, bid, "error",
                             "sbxd was restarted while this build was running or queued; start "
                             "the build again",
                             NULL);
                log_warning("build %s: marked failed (sbxd stopped during it)", bid);
        }
        if (d)
                closedir(d);
        char run[4096];
        if (brec_dir(b, "run", run, sizeof(run)) >= 0)
                rm_rf(run); /* per-build scratch (build-run.c), nothing in it outlives a build */
}

int build_service_start(struct server *srv, struct build_service **ret)
{
        struct build_service *b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->srv = srv;
        b->state = srv->config->state_dir;
        pthread_mutex_init(&b->lock, NULL);
        pthread_cond_init(&b->cond, NULL);
        int r = build_mirror_hosts(&b->allow, &b->n_allow);
        if (r < 0)
                log_warning_errno(r, "build egress: reading the apt sources: %m");
        log_info("template builds: %d workers, egress to %zu package mirror host(s)", BUILD_WORKERS,
                 b->n_allow);
        recover(b);
        for (size_t i = 0; i < BUILD_WORKERS; i++) {
                r = pthread_create(&b->workers[i], NULL, worker_main, b);
                if (r != 0) {
                        build_service_stop(b);
                        return -r;
                }
                b->n_workers++;
        }
        *ret = b;
        return 0;
}

void build_service_stop(struct build_service *b)
{
        if (!b)
                return;
        pthread_mutex_lock(&b->lock);
        b->stopping = true;
        __atomic_store_n(&b->stop_flag, 1, __ATOMIC_RELAXED); /* a pull gives up */
        pthread_cond_broadcast(&b->cond);
        pthread_mutex_unlock(&b->lock);
        /* A worker in a step notices within a second (agent_req_shutdown() ends its waits on
         * the agent), tears its build sandbox down and marks the build failed. One that does
         * not finish within BUILD_STOP_WAIT_S (a jailer or an ingest under way) is left: its
         * build is marked failed at the next start, its sandbox removed by adoption. */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += BUILD_STOP_WAIT_S;
        for (size_t i = 0; i < b->n_workers; i++)
                if (pthread_timedjoin_np(b->workers[i], NULL, &until) != 0) {
                        log_warning("template builds: a worker is still busy at shutdown");
                        pthread_detach(b->workers[i]);
                }
        /* b stays allocated: a detached worker may still use it until the process exits */
}
