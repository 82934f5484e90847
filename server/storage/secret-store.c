/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/secret-store.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"
#include "storage/json-record.h"
#include "time-util.h"

struct secret {
        struct secret_info info;
        char *value; /* wiped before it is freed */
};

struct secret_store {
        char *dir; /* <state>/secrets */
        pthread_mutex_t lock;
        struct secret *v[SECRETS_MAX];
        size_t n;
};

void secret_info_done(struct secret_info *i)
{
        if (i) {
                cJSON_Delete(i->metadata);
                i->metadata = NULL;
        }
}

static void secret_free(struct secret *s)
{
        if (!s)
                return;
        if (s->value) {
                explicit_bzero(s->value, strlen(s->value));
                free(s->value);
        }
        secret_info_done(&s->info);
        free(s);
}

const char *secret_name_check(const char *name, char name_lower[static SECRET_NAME_MAX + 1])
{
        size_t len = strlen(name);
        if (len == 0 || len > SECRET_NAME_MAX)
                return "secret name must be 1 to 63 bytes";
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)name[i];
                if (c == '{' || c == '}' || c < 0x20 || c == 0x7f || c == ' ')
                        return "secret name cannot contain '{', '}', spaces or control characters";
                name_lower[i] = (char)tolower(c);
        }
        name_lower[len] = '\0';
        if (strncmp(name_lower, SECRET_ID_PREFIX, strlen(SECRET_ID_PREFIX)) == 0)
                return "the sec_ prefix is reserved for secret identifiers";
        return NULL;
}

const char *secret_value_check(const char *value)
{
        size_t len = strlen(value);
        if (len == 0 || len > SECRET_VALUE_MAX)
                return "secret value must be 1 to 8192 bytes";
        for (const char *p = value; *p; p++)
                if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
                        return "secret value cannot contain control characters (it goes into "
                               "HTTP headers)";
        return NULL;
}

const char *secret_metadata_check(const cJSON *meta)
{
        if (!meta || cJSON_IsNull(meta))
                return NULL;
        if (!cJSON_IsObject(meta))
                return "metadata must be an object of strings";
        size_t n = 0, total = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, meta)
        {
                if (!cJSON_IsString(e))
                        return "metadata must be an object of strings";
                size_t k = strlen(e->string), v = strlen(e->valuestring);
                if (k == 0 || k > SECRET_META_KEY_MAX || v > SECRET_META_VAL_MAX)
                        return "metadata keys must be 1 to 128 bytes, values at most 1024";
                total += k + v;
                if (++n > SECRET_META_ENTRIES || total > SECRET_META_TOTAL)
                        return "metadata: at most 32 entries and 8192 bytes in total";
        }
        return NULL;
}

/* ---- records ---- */

static int record_path(const struct secret_store *s, const char *id, char *buf, size_t len)
{
        int n = snprintf(buf, len, "%s/%s.json", s->dir, id);
        return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int record_save(const struct secret_store *s, const struct secret *x)
{
        char path[4096];
        int r = record_path(s, x->info.id, path, sizeof(path));
        if (r < 0)
                return r;
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *meta = cJSON_Duplicate(x->info.metadata, true);
        if (!o || !meta || !cJSON_AddItemToObject(o, "metadata", meta)) {
                cJSON_Delete(meta);
                return -ENOMEM;
        }
        if (!cJSON_AddStringToObject(o, "secretID", x->info.id) ||
            !cJSON_AddStringToObject(o, "name", x->info.name) ||
            !cJSON_AddStringToObject(o, "value", x->value) ||
            !cJSON_AddNumberToObject(o, "version", (double)x->info.version) ||
            !cJSON_AddNumberToObject(o, "createdMs", (double)x->info.created_ms) ||
            !cJSON_AddNumberToObject(o, "updatedMs", (double)x->info.updated_ms))
                return -ENOMEM;
        return json_record_write(path, o, 0600);
}

static bool id_valid(const char *id)
{
        if (strlen(id) != SECRET_ID_LEN || strncmp(id, SECRET_ID_PREFIX, 4) != 0)
                return false;
        for (const char *p = id + 4; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

static int record_load(const struct secret_store *s, const char *id, struct secret **ret)
{
        char path[4096];
        int r = record_path(s, id, path, sizeof(path));
        if (r < 0)
                return r;
        _cleanup_json_ cJSON *o = NULL;
        if ((r = json_record_read(path, &o)) < 0)
                return r;
        const cJSON *sid = cJSON_GetObjectItemCaseSensitive(o, "secretID");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
        const cJSON *val = cJSON_GetObjectItemCaseSensitive(o, "value");
        const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "version");
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(o, "createdMs");
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "updatedMs");
        cJSON *meta = cJSON_GetObjectItemCaseSensitive(o, "metadata");
        char lower[SECRET_NAME_MAX + 1];
        if (!cJSON_IsString(sid) || strcmp(sid->valuestring, id) != 0 || !cJSON_IsString(name) ||
            secret_name_check(name->valuestring, lower) || strcmp(lower, name->valuestring) != 0 ||
            !cJSON_IsString(val) || secret_value_check(val->valuestring) || !cJSON_IsNumber(ver) ||
            !cJSON_IsNumber(c) || !cJSON_IsNumber(u) || secret_metadata_check(meta))
                return -EBADMSG;
        struct secret *x = calloc(1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        memcpy(x->info.id, id, SECRET_ID_LEN + 1);
        memcpy(x->info.name, lower, sizeof(lower));
        x->info.version = (int64_t)ver->valuedouble;
        x->info.created_ms = (int64_t)c->valuedouble;
        x->info.updated_ms = (int64_t)u->valuedouble;
        x->info.metadata = meta ? cJSON_Duplicate(meta, true) : cJSON_CreateObject();
        x->value = strdup(val->valuestring);
        explicit_bzero(val->valuestring, strlen(val->valuestring));
        if (!x->info.metadata || !x->value) {
                secret_free(x);
                return -ENOMEM;
        }
        *ret = x;
        return 0;
}

static int by_created(const void *a, const void *b)
{
        const struct secret *x = *(struct secret *const *)a, *y = *(struct secret *const *)b;
        if (x->info.created_ms != y->info.created_ms)
                return x->info.created_ms < y->info.created_ms ? -1 : 1;
        return strcmp(x->info.id, y->info.id);
}

int secret_store_open(const char *state_dir, struct secret_store **ret)
{
        struct secret_store *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        if (asprintf(&s->dir, "%s/" SECRETS_DIRNAME, state_dir) < 0) {
                s->dir = NULL;
                secret_store_free(s);
                return -ENOMEM;
        }
        if ((mkdir(s->dir, 0700) < 0 && errno != EEXIST) || chmod(s->dir, 0700) < 0) {
                int r = log_error_errno(-errno, "secrets: %s: %m", s->dir);
                secret_store_free(s);
                return r;
        }
        DIR *d = opendir(s->dir);
        struct dirent *de;
        while (d && (de = readdir(d)) && s->n < SECRETS_MAX) {
                char id[SECRET_ID_LEN + 1];
                size_t len = strlen(de->d_name);
                if (len != SECRET_ID_LEN + 5 || strcmp(de->d_name + SECRET_ID_LEN, ".json") != 0)
                        continue;
                memcpy(id, de->d_name, SECRET_ID_LEN);
                id[SECRET_ID_LEN] = '\0';
                struct secret *x = NULL;
                int r = id_valid(id) ? record_load(s, id, &x) : -EBADMSG;
                if (r < 0)
                        log_warning("secrets: record %s skipped: %s", de->d_name, strerror(-r));
                else
                        s->v[s->n++] = x;
        }
        if (d)
                closedir(d);
        qsort(s->v, s->n, sizeof(s->v[0]), by_created);
        *ret = s;
        return 0;
}

void secret_store_free(struct secret_store *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < s->n; i++)
                secret_free(s->v[i]);
        pthread_mutex_destroy(&s->lock);
        free(s->dir);
        free(s);
}

/* ---- operations (under the lock) ---- */

static ssize_t find(const struct secret_store *s, const char *ref)
{
        char lower[SECRET_NAME_MAX + 1];
        bool is_id = id_valid(ref);
        if (!is_id && secret_name_check(ref, lower))
                return -ENOENT;
        for (size_t i = 0; i < s->n; i++)
                if (strcmp(is_id ? s->v[i]->info.id : s->v[i]->info.name, is_id ? ref : lower) == 0)
                        return (ssize_t)i;
        return -ENOENT;
}

static int info_copy(const struct secret *x, struct secret_info *ret)
{
        *ret = x->info;
        ret->metadata = cJSON_Duplicate(x->info.metadata, true);
        return ret->metadata ? 0 : -ENOMEM;
}

static cJSON *meta_of(const cJSON *metadata)
{
        return metadata && !cJSON_IsNull(metadata) ? cJSON_Duplicate(metadata, true)
                                                   : cJSON_CreateObject();
}

int secret_create(struct secret_store *s, const char *name, const char *value,
                  const cJSON *metadata, struct secret_info *ret)
{
        char lower[SECRET_NAME_MAX + 1];
        if (secret_name_check(name, lower) || secret_value_check(value) ||
            secret_metadata_check(metadata))
                return -EINVAL;
        struct secret *x = calloc(1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        memcpy(x->info.id, SECRET_ID_PREFIX, 4);
        int r = random_hex(x->info.id + 4, 12);
        memcpy(x->info.name, lower, sizeof(lower));
        x->info.version = 1;
        x->info.metadata = meta_of(metadata);
        x->value = strdup(value);
        if (r >= 0 && (!x->info.metadata || !x->value))
                r = -ENOMEM;
        pthread_mutex_lock(&s->lock);
        if (r >= 0 && find(s, lower) >= 0)
                r = -EEXIST;
        if (r >= 0 && s->n >= SECRETS_MAX)
                r = -EDQUOT;
        /* Creation times are unique and increasing within a store, so a list keeps creation
         * order even for secrets made in the same millisecond, before and after a restart. */
        int64_t now = wall_ms();
        if (s->n > 0 && now <= s->v[s->n - 1]->info.created_ms)
                now = s->v[s->n - 1]->info.created_ms + 1;
        x->info.created_ms = x->info.updated_ms = now;
        if (r >= 0)
                r = record_save(s, x);
        if (r >= 0)
                r = info_copy(x, ret);
        if (r >= 0)
                s->v[s->n++] = TAKE_PTR(x);
        pthread_mutex_unlock(&s->lock);
        secret_free(x);
        return r;
}

int secret_update(struct secret_store *s, const char *ref, const char *value, const cJSON *metadata,
                  struct secret_info *ret)
{
        if (secret_value_check(value) || secret_metadata_check(metadata))
                return -EINVAL;
        _cleanup_free_ char *v = strdup(value);
        if (!v)
                return -ENOMEM;
        pthread_mutex_lock(&s->lock);
        ssize_t i = find(s, ref);
        int r = (int)MIN(i, 0);
        if (r >= 0) {
                struct secret *x = s->v[i], next = *x;
                next.value = v;
                next.info.version++;
                next.info.updated_ms = MAX(wall_ms(), x->info.updated_ms);
                cJSON *m = metadata ? meta_of(metadata) : NULL;
                if (metadata && !m)
                        r = -ENOMEM;
                if (m)
                        next.info.metadata = m;
                if (r >= 0)
                        r = record_save(s, &next);
                if (r >= 0) {
                        if (m)
                                cJSON_Delete(x->info.metadata);
                        explicit_bzero(x->value, strlen(x->value));
                        free(x->value);
                        *x = next;
                        v = NULL;
                        r = info_copy(x, ret);
                } else
                        cJSON_Delete(m);
        }
        pthread_mutex_unlock(&s->lock);
        if (v)
                explicit_bzero(v, strlen(v));
        return r;
}

int secret_get(struct secret_store *s, const char *ref, struct secret_info *ret)
{
        pthread_mutex_lock(&s->lock);
        ssize_t i = find(s, ref);
        int r = i < 0 ? (int)i : info_copy(s->v[i], ret);
        pthread_mutex_unlock(&s->lock);
        return r;
}

int secret_delete(struct secret_store *s, const char *ref)
{
        char path[4096];
        pthread_mutex_lock(&s->lock);
        ssize_t i = find(s, ref);
        int r = i < 0 ? (int)i : record_path(s, s->v[i]->info.id, path, sizeof(path));
        if (r >= 0 && unlink(path) < 0 && errno != ENOENT)
                r = -errno;
        if (r >= 0) {
                secret_free(s->v[i]);
                memmove(&s->v[i], &s->v[i + 1], (s->n - (size_t)i - 1) * sizeof(s->v[0]));
                s->n--;
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

int secret_list(struct secret_store *s, struct secret_info **ret, size_t *ret_n)
{
        pthread_mutex_lock(&s->lock);
        struct secret_info *a = calloc(s->n + 1, sizeof(*a));
        int r = a ? 0 : -ENOMEM;
        size_t n = 0;
        for (; r >= 0 && n < s->n; n++)
                r = info_copy(s->v[n], &a[n]);
        pthread_mutex_unlock(&s->lock);
        if (r < 0) {
                for (size_t i = 0; a && i < n; i++)
                        secret_info_done(&a[i]);
                free(a);
                return r;
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

int secret_store_value(struct secret_store *s, const char *name, char *buf, size_t size)
{
        pthread_mutex_lock(&s->lock);
        ssize_t i = find(s, name);
        int r = (int)MIN(i, 0);
        if (r >= 0) {
                size_t len = strlen(s->v[i]->value);
                if (len >= size)
                        r = -ENOBUFS;
                else {
                        memcpy(buf, s->v[i]->value, len + 1);
                        r = (int)len;
                }
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}
