/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/volume.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"
#include "storage/json-record.h"
#include "storage/volume-mount.h"
#include "time-util.h"

struct volume {
        struct volume_info info;
        bool mounted;
        bool creating;         /* its image is being made: the name is taken, nothing else */
        unsigned requests;     /* content requests in flight (info.users: sandboxes) */
        int64_t idle_since_ms; /* mounted with no user since (a lingering content request) */
};

struct volume_store {
        char *state_dir;
        pthread_mutex_t lock; /* the table, users and mounts; held across a mount (ms) */
        struct volume *v[VOLUMES_MAX];
        size_t n;
};

bool volume_name_valid(const char *name)
{
        size_t n = name ? strlen(name) : 0;
        if (n < 1 || n > VOLUME_NAME_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '-'))
                        return false;
        }
        return true;
}

bool volume_id_valid(const char *id)
{
        if (!id || strlen(id) != VOLUME_ID_LEN)
                return false;
        for (size_t i = 0; i < VOLUME_ID_LEN; i++) {
                bool dash = i == 8 || i == 13 || i == 18 || i == 23;
                char c = id[i];
                if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                        return false;
        }
        return true;
}

static int random_uuid(char out[static VOLUME_ID_LEN + 1])
{
        uint8_t b[16];
        int r = random_bytes(b, sizeof(b));
        if (r < 0)
                return r;
        b[6] = (uint8_t)((b[6] & 0x0f) | 0x40); /* version 4 */
        b[8] = (uint8_t)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
        int n = 0;
        for (int i = 0; i < 16; i++)
                n += snprintf(out + n, (size_t)(VOLUME_ID_LEN + 1 - n), "%s%02x",
                              i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", b[i]);
        return 0;
}

static int vol_path(const char *state_dir, const char *id, const char *leaf, char *buf, size_t len)
{
        int n = leaf
                    ? snprintf(buf, len, "%s/" DISK_IMAGE_VOLUMES_DIR "/%s/%s", state_dir, id, leaf)
                    : snprintf(buf, len, "%s/" DISK_IMAGE_VOLUMES_DIR "/%s", state_dir, id);
        return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int volume_mount_path(const char *state_dir, const char *id, char *buf, size_t len)
{
        return vol_path(state_dir, id, VOLUME_MOUNT_DIRNAME, buf, len);
}

/* ---- records ---- */

static int record_save(const char *state_dir, const struct volume_info *v)
{
        char path[4096];
        int r = vol_path(state_dir, v->id, VOLUME_RECORD_NAME, path, sizeof(path));
        if (r < 0)
                return r;
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "volumeID", v->id) ||
            !cJSON_AddStringToObject(o, "name", v->name) ||
            !cJSON_AddStringToObject(o, "token", v->token) ||
            !cJSON_AddNumberToObject(o, "sizeMB", (double)v->size_mb) ||
            !cJSON_AddNumberToObject(o, "createdAtUnix", (double)v->created_at))
                return -ENOMEM;
        return json_record_write(path, o, 0600);
}

static int record_load(const char *state_dir, const char *id, struct volume_info *ret)
{
        char path[4096];
        int r = vol_path(state_dir, id, VOLUME_RECORD_NAME, path, sizeof(path));
        if (r < 0)
                return r;
        _cleanup_json_ cJSON *o = NULL;
        if ((r = json_record_read(path, &o)) < 0)
                return r;
        const cJSON *vid = cJSON_GetObjectItemCaseSensitive(o, "volumeID");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
        const cJSON *tok = cJSON_GetObjectItemCaseSensitive(o, "token");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(o, "sizeMB");
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(o, "createdAtUnix");
        if (!cJSON_IsString(vid) || strcmp(vid->valuestring, id) != 0 || !cJSON_IsString(name) ||
            !volume_name_valid(name->valuestring) || !cJSON_IsString(tok) ||
            strlen(tok->valuestring) != 2 * VOLUME_TOKEN_BYTES || !cJSON_IsNumber(size) ||
            size->valuedouble < 1)
                return -EBADMSG;
        *ret =
            (struct volume_info){.size_mb = (uint64_t)size->valuedouble,
                                 .created_at = cJSON_IsNumber(at) ? (int64_t)at->valuedouble : 0};
        snprintf(ret->id, sizeof(ret->id), "%.*s", VOLUME_ID_LEN, id);
        snprintf(ret->name, sizeof(ret->name), "%s", name->valuestring);
        snprintf(ret->token, sizeof(ret->token), "%s", tok->valuestring);
        return 0;
}

/* ---- the table (under lock) ---- */

/* A volume that exists (not one still being created). */
static struct volume *find_id(struct volume_store *st, const char *id)
{
        for (size_t i = 0; i < st->n; i++)
                if (!st->v[i]->creating && strcmp(st->v[i]->info.id, id) == 0)
                        return st->v[i];
        return NULL;
}

/* The same by name; with creating, one being created counts too (the name is taken). */
static struct volume *find_name(struct volume_store *st, const char *name, bool creating)
{
        for (size_t i = 0; i < st->n; i++)
                if ((creating || !st->v[i]->creating) && strcmp(st->v[i]->info.name, name) == 0)
                        return st->v[i];
        return NULL;
}

static int table_add(struct volume_store *st, const struct volume_info *info, bool mounted,
                     struct volume **ret)
{
        if (st->n >= VOLUMES_MAX)
                return -EDQUOT;
        struct volume *v = calloc(1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        v->info = *info;
        v->info.users = 0;
        v->mounted = mounted;
        /* oldest first, as the list shows them */
        size_t at = st->n;
        while (at > 0 && st->v[at - 1]->info.created_at > info->created_at)
                at--;
        memmove(&st->v[at + 1], &st->v[at], (st->n - at) * sizeof(st->v[0]));
        st->v[at] = v;
        st->n++;
        if (ret)
                *ret = v;
        return 0;
}

static void table_remove(struct volume_store *st, struct volume *v)
{
        for (size_t i = 0; i < st->n; i++)
                if (st->v[i] == v) {
                        memmove(&st->v[i], &st->v[i + 1], (st->n - i - 1) * sizeof(st->v[0]));
                        st->n--;
                        free(v);
                        return;
                }
}

/* ---- open, settle, free ---- */

static void remove_unrecorded(const char *state_dir, const char *id)
{
        char dir[4096], mnt[4096];
        if (vol_path(state_dir, id, NULL, dir, sizeof(dir)) < 0 ||
            volume_mount_path(state_dir, id, mnt, sizeof(mnt)) < 0)
                return;
        (void)volume_umount(mnt);
        int r = rm_rf(dir);
        if (r < 0)
                log_warning_errno(r, "volume dir %s without a record: removing it: %m", dir);
        else
                log_info("volume dir %s without a record (an interrupted create or delete) "
                         "removed",
                         dir);
}

int volume_store_open(const char *state_dir, struct volume_store **ret)
{
        struct volume_store *st = calloc(1, sizeof(*st));
        if (!st || !(st->state_dir = strdup(state_dir))) {
                free(st);
                return -ENOMEM;
        }
        pthread_mutex_init(&st->lock, NULL);
        char base[4096];
        snprintf(base, sizeof(base), "%s/" DISK_IMAGE_VOLUMES_DIR, state_dir);
        if (mkdir(base, 0700) < 0 && errno != EEXIST) {
                int r = -errno;
                volume_store_free(st);
                return r;
        }
        DIR *d = opendir(base);
        for (struct dirent *de; d && (de = readdir(d));) {
                struct volume_info info;
                char mnt[4096];
                if (de->d_name[0] == '.')
                        continue;
                int r = volume_id_valid(de->d_name) ? record_load(state_dir, de->d_name, &info)
                                                    : -EINVAL;
                if (r == -ENOENT) {
                        /* no record: a create or a delete that a crash cut short */
                        remove_unrecorded(state_dir, de->d_name);
                        continue;
                }
                if (r >= 0 && (r = volume_mount_path(state_dir, info.id, mnt, sizeof(mnt))) >= 0)
                        r = table_add(st, &info, volume_is_mounted(mnt), NULL);
                if (r < 0)
                        log_warning_errno(r, "volume dir %s/%s: not loaded (%m); left as it is",
                                          base, de->d_name);
        }
        if (d)
                closedir(d);
        *ret = st;
        return 0;
}

/* Under lock: unmount v when nobody uses it. */
static void unmount_unused(struct volume_store *st, struct volume *v)
{
        char mnt[4096];
        if (!v->mounted || v->info.users > 0 || v->requests > 0 ||
            volume_mount_path(st->state_dir, v->info.id, mnt, sizeof(mnt)) < 0)
                return;
        int r = volume_umount(mnt);
        if (r < 0)
                log_warning_errno(r, "volume %s: unmounting %s: %m", v->info.id, mnt);
        else
                v->mounted = false;
}

void volume_store_settle(struct volume_store *st)
{
        pthread_mutex_lock(&st->lock);
        for (size_t i = 0; i < st->n; i++)
                unmount_unused(st, st->v[i]);
        pthread_mutex_unlock(&st->lock);
}

void volume_store_sweep(struct volume_store *st)
{
        int64_t now = now_ms();
        pthread_mutex_lock(&st->lock);
        for (size_t i = 0; i < st->n; i++) {
                struct volume *v = st->v[i];
                if (v->mounted && v->info.users == 0 && v->requests == 0 &&
                    now - v->idle_since_ms >= VOLUME_IDLE_UNMOUNT_S * 1000)
                        unmount_unused(st, v);
        }
        pthread_mutex_unlock(&st->lock);
}

void volume_store_free(struct volume_store *st)
{
        if (!st)
                return;
        for (size_t i = 0; i < st->n; i++) {
                unmount_unused(st, st->v[i]); /* lingering ones; those in use stay */
                free(st->v[i]);
        }
        pthread_mutex_destroy(&st->lock);
        free(st->state_dir);
        free(st);
}

/* ---- operations ---- */

static int remove_lost_found(const char *dir, const char *mnt)
{
        char image[4096 + 32];
        snprintf(image, sizeof(image), "%s/" DISK_IMAGE_NAME, dir);
        int r = volume_mount_image(image, mnt);
        if (r < 0)
                return r;
        _cleanup_close_ int root = open(mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0 || (unlinkat(root, "lost+found", AT_REMOVEDIR) < 0 && errno != ENOENT))
                r = -errno;
        root = safe_close(root);
        int u = volume_umount(mnt);
        return r < 0 ? r : u;
}

/* The volume's dir with its record and image, not yet in the table. */
static int make_volume(struct volume_store *st, const struct volume_info *info,
                       const struct disk_policy *pol, char *errmsg, size_t errlen)
{
        char dir[4096], mnt[4096];
        int r = vol_path(st->state_dir, info->id, NULL, dir, sizeof(dir));
        if (r < 0 || (r = volume_mount_path(st->state_dir, info->id, mnt, sizeof(mnt))) < 0)
                return r;
        if (mkdir(dir, 0700) < 0)
                return -errno;
        if (mkdir(mnt, 0700) < 0)
                r = -errno;
        if (r >= 0)
                r = disk_image_create_volume(st->state_dir, info->size_mb << 20, dir, pol, errmsg,
                                             errlen);
        if (r >= 0) /* mkfs's lost+found is not the user's: fsck is never run here */
                r = remove_lost_found(dir, mnt);
        if (r >= 0) /* the record last: a dir without one is never loaded */
                r = record_save(st->state_dir, info);
        if (r < 0)
                (void)rm_rf(dir);
        return r;
}

int volume_create(struct volume_store *st, const char *name, uint64_t size_mb,
                  const struct disk_policy *pol, struct volume_info *ret, char *errmsg,
                  size_t errlen)
{
        struct volume_info info = {.size_mb = size_mb, .created_at = (int64_t)time(NULL)};
        int r = random_uuid(info.id);
        if (r >= 0)
                r = random_hex(info.token, VOLUME_TOKEN_BYTES);
        if (r < 0)
                return r;
        snprintf(info.name, sizeof(info.name), "%s", name);
        /* The name is taken at once by an entry nothing else sees; the image is made outside
         * the lock (mkfs and preallocation: ~100 ms) so mounts and lookups of other volumes
         * never wait for it. */
        struct volume *v = NULL;
        pthread_mutex_lock(&st->lock);
        if (find_name(st, name, true))
                r = -EEXIST;
        else if ((r = table_add(st, &info, false, &v)) >= 0)
                v->creating = true;
        pthread_mutex_unlock(&st->lock);
        if (r < 0)
                return r;
        r = make_volume(st, &info, pol, errmsg, errlen);
        pthread_mutex_lock(&st->lock);
        if (r < 0)
                table_remove(st, v); /* only this call removes a creating entry */
        else
                v->creating = false;
        pthread_mutex_unlock(&st->lock);
        if (r >= 0)
                *ret = info;
        return r;
}

int volume_get(struct volume_store *st, const char *id, struct volume_info *ret)
{
        pthread_mutex_lock(&st->lock);
        struct volume *v = find_id(st, id);
        if (v)
                *ret = v->info;
        pthread_mutex_unlock(&st->lock);
        return v ? 0 : -ENOENT;
}

int volume_find_name(struct volume_store *st, const char *name, struct volume_info *ret)
{
        pthread_mutex_lock(&st->lock);
        struct volume *v = find_name(st, name, false);
        if (v)
                *ret = v->info;
        pthread_mutex_unlock(&st->lock);
        return v ? 0 : -ENOENT;
}

int volume_list(struct volume_store *st, struct volume_info **ret, size_t *ret_n)
{
        pthread_mutex_lock(&st->lock);
        struct volume_info *a = calloc(st->n + 1, sizeof(*a));
        size_t n = 0;
        for (size_t i = 0; a && i < st->n; i++)
                if (!st->v[i]->creating)
                        a[n++] = st->v[i]->info;
        pthread_mutex_unlock(&st->lock);
        if (!a)
                return -ENOMEM;
        *ret = a;
        *ret_n = n;
        return 0;
}

int volume_delete(struct volume_store *st, const char *id, unsigned *ret_users)
{
        char dir[4096], mnt[4096];
        pthread_mutex_lock(&st->lock);
        struct volume *v = find_id(st, id);
        int r = v ? 0 : -ENOENT;
        if (v && v->info.users > 0) {
                *ret_users = v->info.users;
                r = -EBUSY;
        }
        if (r >= 0 && (r = vol_path(st->state_dir, id, NULL, dir, sizeof(dir))) >= 0 &&
            (r = volume_mount_path(st->state_dir, id, mnt, sizeof(mnt))) >= 0) {
                /* A content request still running (its client may already have its answer)
                 * keeps what it has open on the detached mount; nothing new gets in. The
                 * record goes first: a crash in between leaves a dir that is never loaded. */
                char rec[4096 + 32];
                snprintf(rec, sizeof(rec), "%s/" VOLUME_RECORD_NAME, dir);
                if (v->mounted && (r = volume_umount(mnt)) < 0)
                        log_warning_errno(r, "volume %s: unmounting %s: %m", id, mnt);
                else if (unlink(rec) < 0 && errno != ENOENT)
                        r = -errno;
        }
        if (r >= 0)
                table_remove(st, v);
        pthread_mutex_unlock(&st->lock);
        if (r < 0)
                return r;
        r = rm_rf(dir);
        if (r < 0)
                log_warning_errno(r, "volume %s: removing %s: %m", id, dir);
        return 0;
}

int volume_acquire(struct volume_store *st, const char *id, bool request, char *ret_mnt,
                   size_t mnt_len)
{
        char image[4096];
        pthread_mutex_lock(&st->lock);
        struct volume *v = find_id(st, id);
        int r = v ? volume_mount_path(st->state_dir, id, ret_mnt, mnt_len) : -ENOENT;
        if (r >= 0 && !v->mounted) {
                r = vol_path(st->state_dir, id, DISK_IMAGE_NAME, image, sizeof(image));
                if (r >= 0)
                        r = volume_mount_image(image, ret_mnt);
                if (r >= 0)
                        v->mounted = true;
                else
                        log_error_errno(r, "volume %s: mounting %s on %s: %m", id, image, ret_mnt);
        }
        if (r >= 0 && request)
                v->requests++;
        else if (r >= 0)
                v->info.users++;
        pthread_mutex_unlock(&st->lock);
        return r;
}

void volume_release(struct volume_store *st, const char *id, bool request)
{
        pthread_mutex_lock(&st->lock);
        struct volume *v = find_id(st, id);
        unsigned *n = v ? (request ? &v->requests : &v->info.users) : NULL;
        if (n && *n > 0 && --*n == 0 && v->info.users + v->requests == 0) {
                v->idle_since_ms = now_ms();
                if (!request) /* a request's mount lingers: the next one is likely to follow */
                        unmount_unused(st, v);
        }
        pthread_mutex_unlock(&st->lock);
}
