/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names of built templates (docs/e2b-wire.md §2.8): aliases, tags, list, get and delete. A
 * template record's "tags" maps each tag to the build it names; each tag of a ready build is
 * published as sbx templates (build-internal.h brec_publish): "<alias>" and "<templateID>"
 * for the tag "default", "<alias>:<tag>" and "<templateID>:<tag>" for the others.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "template-build/build-internal.h"
#include "fd-util.h"
#include "json-util.h"
#include "lifecycle/sandbox.h"
#include "log.h"

int build_alias(struct build_service *b, const char *alias, cJSON **ret, char *err)
{
        char tid[BUILD_TEMPLATE_ID_MAX], tag[BUILD_TAG_MAX + 1], path[4096];
        pthread_mutex_lock(&b->lock);
        int r = brec_resolve(b, alias, tid, tag);
        pthread_mutex_unlock(&b->lock);
        cJSON *o = cJSON_CreateObject();
        if (r >= 0) {
                cJSON_AddBoolToObject(o, "public", false);
                cJSON_AddStringToObject(o, "templateID", tid);
        } else {
                /* the built-in templates, images and snapshots are sbx's own names */
                snprintf(path, sizeof(path), "%s/templates/%s/template.json", b->state, alias);
                if (strchr(alias, '/') || alias[0] == '.' || access(path, F_OK) < 0) {
                        cJSON_Delete(o);
                        return ERR(-ENOENT, "template alias '%s' not found", alias);
                }
                cJSON_AddBoolToObject(o, "public", true);
                cJSON_AddStringToObject(o, "templateID", alias);
        }
        *ret = o;
        return 0;
}

/* The record of the last ready build of t ("" when none) and the number of builds. */
static void last_ready(struct build_service *b, const cJSON *t, char ret_bid[BUILD_ID_MAX],
                       const char **ret_status)
{
        const cJSON *builds = cJSON_GetObjectItemCaseSensitive(t, "builds");
        ret_bid[0] = 0;
        *ret_status = "waiting";
        for (int i = cJSON_GetArraySize(builds) - 1; i >= 0; i--) {
                const cJSON *x = cJSON_GetArrayItem(builds, i);
                _cleanup_json_ cJSON *rec =
                    cJSON_IsString(x) ? brec_read(b, REC_BUILDS, x->valuestring) : NULL;
                const char *st = str(rec, "status");
                if (i == cJSON_GetArraySize(builds) - 1 && st)
                        *ret_status = strcmp(st, "ready") == 0   ? "ready"
                                      : strcmp(st, "error") == 0 ? "error"
                                                                 : "building";
                if (st && strcmp(st, "ready") == 0) {
                        snprintf(ret_bid, BUILD_ID_MAX, "%s", x->valuestring);
                        return;
                }
        }
}

static void add_sizes(cJSON *o, const cJSON *rec)
{
        const cJSON *tpl = cJSON_GetObjectItemCaseSensitive(rec, "template");
        static const char *const k[] = {"cpuCount", "memoryMB", "diskSizeMB"};
        static const double def[] = {2, 1024, 1024};
        for (size_t i = 0; i < ELEMENTSOF(k); i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(tpl, k[i]);
                if (!cJSON_IsNumber(v))
                        v = cJSON_GetObjectItemCaseSensitive(rec, k[i]);
                cJSON_AddNumberToObject(o, k[i], cJSON_IsNumber(v) ? v->valuedouble : def[i]);
        }
}

static cJSON *template_json(struct build_service *b, const cJSON *t)
{
        char bid[BUILD_ID_MAX];
        const char *status;
        last_ready(b, t, bid, &status);
        _cleanup_json_ cJSON *rec = bid[0] ? brec_read(b, REC_BUILDS, bid) : NULL;
        cJSON *o = cJSON_CreateObject();
        const cJSON *names = cJSON_GetObjectItemCaseSensitive(t, "names");
        const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(t, "buildCount");
        cJSON_AddStringToObject(o, "templateID", str(t, "templateID"));
        cJSON_AddStringToObject(o, "buildID", bid);
        cJSON_AddStringToObject(o, "buildStatus", status);
        add_sizes(o, rec);
        cJSON_AddStringToObject(o, "envdVersion", ENVD_VERSION);
        cJSON_AddStringToObject(o, "createdAt", str(t, "createdAt"));
        cJSON_AddStringToObject(o, "updatedAt", str(t, "updatedAt"));
        cJSON_AddNullToObject(o, "lastSpawnedAt");
        cJSON_AddNumberToObject(o, "spawnCount", 0);
        cJSON_AddNumberToObject(o, "buildCount", cJSON_IsNumber(cnt) ? cnt->valuedouble : 0);
        cJSON_AddItemToObject(o, "aliases", cJSON_Duplicate(names, 1));
        cJSON_AddItemToObject(o, "names", cJSON_Duplicate(names, 1));
        cJSON_AddBoolToObject(o, "public", false);
        cJSON_AddNullToObject(o, "createdBy");
        return o;
}

int build_list(struct build_service *b, cJSON **ret, char *err)
{
        char dir[4096];
        cJSON *out = cJSON_CreateArray();
        pthread_mutex_lock(&b->lock);
        DIR *d = brec_dir(b, REC_TEMPLATES, dir, sizeof(dir)) >= 0 ? opendir(dir) : NULL;
        struct dirent *de;
        char id[BUILD_TEMPLATE_ID_MAX];
        while (d && (de = readdir(d))) {
                if (de->d_name[0] == '.' || !brec_file_id(de->d_name, id))
                        continue;
                _cleanup_json_ cJSON *t = brec_read(b, REC_TEMPLATES, id);
                if (t)
                        cJSON_AddItemToArray(out, template_json(b, t));
        }
        if (d)
                closedir(d);
        pthread_mutex_unlock(&b->lock);
        *ret = out;
        return 0;
}

/* The template record ref names (its tag ignored). Under the lock. */
static int get_template(struct build_service *b, const char *ref, char tid[BUILD_TEMPLATE_ID_MAX],
                        char tag[BUILD_TAG_MAX + 1], cJSON **ret, char *err)
{
        if (brec_resolve(b, ref, tid, tag) < 0 || !(*ret = brec_read(b, REC_TEMPLATES, tid)))
                return ERR(-ENOENT, "template '%s' not found", ref);
        return 0;
}

int build_get(struct build_service *b, const char *ref, cJSON **ret, char *err)
{
        char tid[BUILD_TEMPLATE_ID_MAX], tag[BUILD_TAG_MAX + 1];
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *t = NULL;
        int r = get_template(b, ref, tid, tag, &t, err);
        cJSON *o = NULL;
        if (r >= 0) {
                o = template_json(b, t);
                cJSON *builds = cJSON_AddArrayToObject(o, "builds"), *x;
                cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(t, "builds"))
                {
                        _cleanup_json_ cJSON *rec =
                            cJSON_IsString(x) ? brec_read(b, REC_BUILDS, x->valuestring) : NULL;
                        if (!rec)
                                continue;
                        cJSON *e = cJSON_CreateObject();
                        cJSON_AddStringToObject(e, "buildID", x->valuestring);
                        cJSON_AddStringToObject(e, "status", str(rec, "status"));
                        cJSON_AddStringToObject(e, "createdAt", str(rec, "createdAt"));
                        cJSON_AddStringToObject(e, "updatedAt", str(rec, "updatedAt"));
                        if (str(rec, "finishedAt"))
                                cJSON_AddStringToObject(e, "finishedAt", str(rec, "finishedAt"));
                        add_sizes(e, rec);
                        cJSON_AddStringToObject(e, "envdVersion", ENVD_VERSION);
                        cJSON_AddItemToArray(builds, e);
                }
        }
        pthread_mutex_unlock(&b->lock);
        *ret = o;
        return r;
}

int build_delete(struct build_service *b, const char *ref, char *err)
{
        char tid[BUILD_TEMPLATE_ID_MAX], tag[BUILD_TAG_MAX + 1], dir[4096], path[4300];
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *t = NULL;
        int r = get_template(b, ref, tid, tag, &t, err);
        if (r >= 0) {
                const cJSON *e, *x;
                cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(t, "tags"))
                {
                        brec_unpublish_tag(b, t, e->string);
                }
                cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(t, "builds"))
                {
                        if (cJSON_IsString(x))
                                brec_remove_build(b, x->valuestring);
                }
                if (brec_dir(b, "files", dir, sizeof(dir)) >= 0) {
                        snprintf(path, sizeof(path), "%s/%s", dir, tid);
                        rm_rf(path);
                }
                if (brec_dir(b, REC_TEMPLATES, dir, sizeof(dir)) >= 0) {
                        snprintf(path, sizeof(path), "%s/%s.json", dir, tid);
                        r = unlink(path) < 0 ? -errno : 0;
                }
        }
        pthread_mutex_unlock(&b->lock);
        if (r >= 0)
                log_info("template %s (%s) deleted", tid, ref);
        return r;
}

/* ---- tags ---- */

static int tag_list(const cJSON *body, const char *field, cJSON **ret, char *err)
{
        const cJSON *tags = cJSON_GetObjectItemCaseSensitive(body, field), *t;
        if (!cJSON_IsArray(tags) || cJSON_GetArraySize(tags) == 0 ||
            cJSON_GetArraySize(tags) > BUILD_MAX_TAGS)
                return ERR(-EINVAL, "%s must be an array of 1..%d tags", field, BUILD_MAX_TAGS);
        cJSON_ArrayForEach(t, tags)
        {
                if (!cJSON_IsString(t) || !build_tag_valid(t->valuestring))
                        return ERR(-EINVAL,
                                   "invalid tag in %s: [A-Za-z0-9_][A-Za-z0-9._-]*, at most %d "
                                   "characters, not a UUID",
                                   field, BUILD_TAG_MAX);
        }
        cJSON_ArrayForEach(t, tags)
        {
                build_tag_lower(t->valuestring);
        }
        *ret = cJSON_Duplicate(tags, 1);
        return 0;
}

int build_tags_assign(struct build_service *b, const cJSON *body, cJSON **ret, char *err)
{
        const char *target = str(body, "target");
        char tid[BUILD_TEMPLATE_ID_MAX], tag[BUILD_TAG_MAX + 1], ts[32];
        _cleanup_json_ cJSON *tags = NULL;
        if (!target)
                return ERR(-EINVAL, "target (\"name:tag\") is required");
        int r = tag_list(body, "tags", &tags, err);
        if (r < 0)
                return r;
        build_now(ts);
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *t = NULL, *rec = NULL;
        r = get_template(b, target, tid, tag, &t, err);
        cJSON *map = cJSON_GetObjectItemCaseSensitive(t, "tags");
        const char *bid = NULL;
        if (r >= 0) {
                bid =
                    str(cJSON_GetObjectItemCaseSensitive(map, tag[0] ? tag : "default"), "buildID");
                rec = bid ? brec_read(b, REC_BUILDS, bid) : NULL;
                if (!rec || !cJSON_GetObjectItemCaseSensitive(rec, "template"))
                        r = ERR(-ENOENT, "'%s' names no finished build", target);
        }
        const cJSON *x;
        cJSON_ArrayForEach(x, (r >= 0 ? tags : NULL))
        {
                cJSON_DeleteItemFromObjectCaseSensitive(map, x->valuestring);
                cJSON *e = cJSON_AddObjectToObject(map, x->valuestring);
                cJSON_AddStringToObject(e, "buildID", bid);
                cJSON_AddStringToObject(e, "createdAt", ts);
        }
        if (r >= 0)
                r = brec_publish(b, t, bid, cJSON_GetObjectItemCaseSensitive(rec, "template"));
        if (r >= 0)
                r = brec_write(b, REC_TEMPLATES, tid, t);
        cJSON *o = NULL;
        if (r >= 0) {
                o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "buildID", bid);
                cJSON_AddItemToObject(o, "tags", TAKE_PTR(tags));
        }
        pthread_mutex_unlock(&b->lock);
        if (r < 0)
                return err[0] ? r : ERR(r, "assigning tags failed: %s", strerror(-r));
        *ret = o;
        return 0;
}

int build_tags_remove(struct build_service *b, const cJSON *body, char *err)
{
        const char *name = str(body, "name");
        char tid[BUILD_TEMPLATE_ID_MAX], tag[BUILD_TAG_MAX + 1];
        _cleanup_json_ cJSON *tags = NULL;
        if (!name)
                return ERR(-EINVAL, "name is required");
        int r = tag_list(body, "tags", &tags, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *t = NULL;
        r = get_template(b, name, tid, tag, &t, err);
        cJSON *map = cJSON_GetObjectItemCaseSensitive(t, "tags");
        const cJSON *x;
        cJSON_ArrayForEach(x, (r >= 0 ? tags : NULL))
        {
                if (!cJSON_GetObjectItemCaseSensitive(map, x->valuestring)) {
                        r = ERR(-ENOENT, "template '%s' has no tag '%s'", name, x->valuestring);
                        break;
                }
        }
        cJSON_ArrayForEach(x, (r >= 0 ? tags : NULL))
        {
                brec_unpublish_tag(b, t, x->valuestring);
                cJSON_DeleteItemFromObjectCaseSensitive(map, x->valuestring);
        }
        if (r >= 0)
                r = brec_write(b, REC_TEMPLATES, tid, t);
        pthread_mutex_unlock(&b->lock);
        return r < 0 && !err[0] ? ERR(r, "removing tags failed: %s", strerror(-r)) : r;
}

int build_tags_list(struct build_service *b, const char *ref, cJSON **ret, char *err)
{
        char tid[BUILD_TEMPLATE_ID_MAX], tag[BUILD_TAG_MAX + 1];
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *t = NULL;
        int r = get_template(b, ref, tid, tag, &t, err);
        cJSON *out = r >= 0 ? cJSON_CreateArray() : NULL;
        const cJSON *e;
        cJSON_ArrayForEach(e, (r >= 0 ? cJSON_GetObjectItemCaseSensitive(t, "tags") : NULL))
        {
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "tag", e->string);
                cJSON_AddStringToObject(o, "buildID", str(e, "buildID"));
                cJSON_AddStringToObject(o, "createdAt", str(e, "createdAt"));
                cJSON_AddItemToArray(out, o);
        }
        pthread_mutex_unlock(&b->lock);
        if (r < 0)
                return r;
        *ret = out;
        return 0;
}
