/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/layer-store.h"
#include "storage/layer-walk.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fd-util.h"
#include "macros.h"
#include "random-util.h"
#include "sha256.h"

static pthread_rwlock_t store_lock = PTHREAD_RWLOCK_INITIALIZER;

/* Pins (layer_store_pin): layers gc keeps though nothing on disk names them yet. */
struct pin {
        char hex[LAYER_ID_MAX];
        unsigned count;
};
static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pin *pins;
static size_t n_pins, cap_pins;

void layer_store_read_lock(void)
{
        pthread_rwlock_rdlock(&store_lock);
}

void layer_store_unlock(void)
{
        pthread_rwlock_unlock(&store_lock);
}

void layer_store_path(const char *state, const char *hex, char *buf, size_t size)
{
        snprintf(buf, size, "%s/layers/%s", state, hex);
}

static bool is_hex64(const char *s)
{
        size_t n = strspn(s, "0123456789abcdef");
        return n == 64 && s[64] == 0;
}

int layer_store_is_layer(const char *state, const char *path, char *ret_hex)
{
        size_t l = strlen(state);
        if (strncmp(path, state, l) != 0 || strncmp(path + l, "/layers/", 8) != 0 ||
            !is_hex64(path + l + 8))
                return 0;
        if (ret_hex)
                memcpy(ret_hex, path + l + 8, LAYER_ID_MAX);
        return 1;
}

static int ensure_dirs(const char *state)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/layers", state);
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        snprintf(path, sizeof(path), "%s/layers/.imports", state);
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Walk src (an open dir) into a fresh temp dir, then rename it to layers/<hash>. */
static int ingest(const char *state, int src, struct walk *w, char *ret_hex)
{
        char tmp[4096], final[4096], rnd[17];
        struct stat st;
        int r = ensure_dirs(state);
        if (r < 0)
                return r;
        if (fstat(src, &st) < 0)
                return -errno;
        w->dev = st.st_dev;
        sha256_init(&w->h);
        layer_walk_hash_entry(w, "", &st);
        if ((r = random_hex(rnd, 8)) < 0)
                return r;
        snprintf(tmp, sizeof(tmp), "%s/layers/.tmp-%s", state, rnd);
        if (mkdir(tmp, 0700) < 0)
                return -errno;
        _cleanup_close_ int dst = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        w->dst_root = dst;
        r = dst < 0 ? -errno : layer_walk_copy(w, src, dst);
        layer_walk_done(w);
        if (r >= 0 &&
            (fchown(dst, layer_walk_map_id(w, st.st_uid), layer_walk_map_id(w, st.st_gid)) < 0 ||
             fchmod(dst, st.st_mode & 07777) < 0))
                r = -errno;
        if (r < 0) {
                rm_rf(tmp);
                return r;
        }
        sha256_final_hex(&w->h, ret_hex);
        layer_store_path(state, ret_hex, final, sizeof(final));
        if (rename(tmp, final) < 0) {
                r = errno == EEXIST || errno == ENOTEMPTY ? 0 : -errno;
                rm_rf(tmp); /* the same layer is stored already */
        }
        return r;
}

int layer_store_ingest_upper(const char *state, const char *upper, uid_t uid_base, uid_t uid_count,
                             char *ret_hex)
{
        char parent[4096];
        struct stat dir_st, up_st;
        _cleanup_close_ int src = open(upper, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0)
                return errno == ENOENT ? -ENODEV : -errno;
        /* The upper's file system must really be there: a tmpfs or an image mounted at
         * <dir>/rootfs, a pool subvolume (a file system of its own to stat) at
         * <pool>/sandboxes/<id>; an old sandbox has an empty dir on the state disk. */
        snprintf(parent, sizeof(parent), "%s/../..", upper);
        if (fstat(src, &up_st) < 0 || stat(parent, &dir_st) < 0)
                return -errno;
        if (up_st.st_dev == dir_st.st_dev)
                return -ENODEV;
        struct walk w = {.upper = true, .base = uid_base, .count = uid_count};
        return ingest(state, src, &w, ret_hex);
}

/* The import cache's key of a template layer dir: its path and identity; build.sh replaces a
 * layer dir, never edits it. */
static void import_key(const char *dir, const struct stat *st, char key[static 65])
{
        struct sha256 h;
        char id[4096 + 128];
        int n = snprintf(id, sizeof(id), "%s\n%llu %llu %lld.%09ld", dir,
                         (unsigned long long)st->st_dev, (unsigned long long)st->st_ino,
                         (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
        sha256_init(&h);
        sha256_update(&h, id, (size_t)MIN(n, (int)sizeof(id) - 1));
        sha256_final_hex(&h, key);
}

int layer_store_import_dir(const char *state, const char *dir, char *ret_hex)
{
        struct stat st;
        char key[65], cache[4096], have[4096];
        int r = ensure_dirs(state);
        if (r < 0)
                return r;
        _cleanup_close_ int src = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0 || fstat(src, &st) < 0)
                return -errno;
        import_key(dir, &st, key);
        snprintf(cache, sizeof(cache), "%s/layers/.imports/%s", state, key);
        _cleanup_close_ int cfd = open(cache, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd >= 0) {
                char hex[LAYER_ID_MAX] = "";
                ssize_t k = read(cfd, hex, 64);
                struct stat lst;
                layer_store_path(state, hex, have, sizeof(have));
                if (k == 64 && is_hex64(hex) && stat(have, &lst) == 0) {
                        memcpy(ret_hex, hex, LAYER_ID_MAX);
                        return 0;
                }
        }
        struct walk w = {.link = true};
        r = ingest(state, src, &w, ret_hex);
        if (r >= 0) {
                _cleanup_close_ int out =
                    open(cache, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
                /* the layer, then the dir it came from: gc keeps the layer while that dir is
                 * still the one imported (imports_refs) */
                if (out >= 0 && write_full(out, ret_hex, 64) >= 0)
                        (void)dprintf(out, "\n%s\n", dir);
        }
        return r;
}

int layer_store_refs(const char *state, const cJSON *layers, cJSON *refs)
{
        const cJSON *l;
        cJSON_ArrayForEach(l, layers)
        {
                char hex[LAYER_ID_MAX];
                int r = cJSON_IsString(l) ? 0 : -EINVAL;
                if (r >= 0 && !layer_store_is_layer(state, l->valuestring, hex))
                        r = layer_store_import_dir(state, l->valuestring, hex);
                if (r < 0)
                        return r;
                layer_store_ref_add(refs, hex);
        }
        return 0;
}

void layer_store_ref_add(cJSON *refs, const char *hex)
{
        char ref[LAYER_ID_MAX + 8];
        snprintf(ref, sizeof(ref), LAYER_PREFIX "%s", hex);
        cJSON_AddItemToArray(refs, cJSON_CreateString(ref));
}

struct refs {
        char (*hex)[LAYER_ID_MAX];
        size_t n, cap;
};

static void refs_add(struct refs *rf, const char *hex)
{
        if (rf->n == rf->cap) {
                size_t cap = MAX(rf->cap * 2, (size_t)32);
                void *nv = realloc(rf->hex, cap * sizeof(*rf->hex));
                if (!nv)
                        return;
                rf->hex = nv;
                rf->cap = cap;
        }
        memcpy(rf->hex[rf->n++], hex, LAYER_ID_MAX);
}

static bool refs_has(const struct refs *rf, const char *hex)
{
        for (size_t i = 0; i < rf->n; i++)
                if (strcmp(rf->hex[i], hex) == 0)
                        return true;
        return false;
}

/* Layers no record names yet but another node is about to pull (layer_store_hold). */
static struct {
        char hex[LAYER_ID_MAX];
        time_t until;
} holds[LAYER_HOLD_MAX];
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;

void layer_store_hold(const char *hex)
{
        time_t now = time(NULL);
        size_t pick = 0;
        pthread_mutex_lock(&hold_lock);
        for (size_t i = 0; i < LAYER_HOLD_MAX; i++) {
                if (strcmp(holds[i].hex, hex) == 0) {
                        pick = i;
                        break;
                }
                if (holds[i].until < holds[pick].until)
                        pick = i; /* the oldest (or an empty one) makes room */
        }
        snprintf(holds[pick].hex, sizeof(holds[pick].hex), "%s", hex);
        holds[pick].until = now + LAYER_HOLD_S;
        pthread_mutex_unlock(&hold_lock);
}

static bool held(const char *hex)
{
        time_t now = time(NULL);
        bool found = false;
        pthread_mutex_lock(&hold_lock);
        for (size_t i = 0; i < LAYER_HOLD_MAX && !found; i++)
                found = holds[i].until > now && strcmp(holds[i].hex, hex) == 0;
        pthread_mutex_unlock(&hold_lock);
        return found;
}

/* Every layer a JSON file's "layers" array names ("sha256:<hex>" or a store path). Returns
 * -errno when a file exists but cannot be read: gc must then keep everything. */
static int refs_from_file(const char *state, const char *path, struct refs *rf)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        /* not a template's dir (a file among the templates: build-all.sh's .fallback note, its
         * .building lock): it names no layer */
        if (fd < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_all(fd, 1024 * 1024, &text, &len);
        if (r < 0)
                return r;
        cJSON *j = cJSON_ParseWithLength(text, len);
        const cJSON *l, *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
        char hex[LAYER_ID_MAX];
        cJSON_ArrayForEach(l, layers)
        {
                if (!cJSON_IsString(l))
                        continue;
                const char *v = l->valuestring;
                if (strncmp(v, LAYER_PREFIX, strlen(LAYER_PREFIX)) == 0 &&
                    is_hex64(v + strlen(LAYER_PREFIX)))
                        refs_add(rf, v + strlen(LAYER_PREFIX));
                else if (layer_store_is_layer(state, v, hex))
                        refs_add(rf, hex);
        }
        cJSON_Delete(j);
        return 0;
}

static int refs_from_dir(const char *state, const char *sub, const char *file, struct refs *rf)
{
        char base[4096], path[8192];
        snprintf(base, sizeof(base), "%s/%s", state, sub);
        DIR *d = opendir(base);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int r = 0;
        struct dirent *de;
        while (r >= 0 && (de = readdir(d))) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                snprintf(path, sizeof(path), "%s/%s/%s", base, de->d_name, file);
                r = refs_from_file(state, path, rf);
        }
        closedir(d);
        return r;
}

int layer_store_pin(const char *hex)
{
        if (!is_hex64(hex))
                return -EINVAL;
        pthread_mutex_lock(&pin_lock);
        int r = 0;
        size_t i;
        for (i = 0; i < n_pins && strcmp(pins[i].hex, hex) != 0; i++)
                ;
        if (i == n_pins && n_pins == cap_pins) {
                size_t cap = cap_pins ? cap_pins * 2 : 16;
                struct pin *v = realloc(pins, cap * sizeof(*v));
                if (v) {
                        pins = v;
                        cap_pins = cap;
                } else {
                        r = -ENOMEM;
                }
        }
        if (r >= 0 && i == n_pins) {
                memcpy(pins[n_pins].hex, hex, LAYER_ID_MAX);
                pins[n_pins++].count = 0;
        }
        if (r >= 0)
                pins[i].count++;
        pthread_mutex_unlock(&pin_lock);
        return r;
}

void layer_store_unpin(const char *hex)
{
        pthread_mutex_lock(&pin_lock);
        for (size_t i = 0; i < n_pins; i++)
                if (strcmp(pins[i].hex, hex) == 0) {
                        if (--pins[i].count == 0)
                                pins[i] = pins[--n_pins];
                        break;
                }
        pthread_mutex_unlock(&pin_lock);
}

/* The layers of layers/.imports entries whose template layer dir is still the one imported: a
 * template's own layers stay in the store while it exists, so that every snapshot of a template
 * does not hash it again after the last one was deleted. Stale entries are removed. */
static void imports_refs(const char *state, struct refs *rf)
{
        char base[4096], path[8192], buf[64 + 2 + 4096 + 2], key[65];
        snprintf(base, sizeof(base), "%s/layers/.imports", state);
        DIR *d = opendir(base);
        for (struct dirent *de; d && (de = readdir(d));) {
                if (!is_hex64(de->d_name))
                        continue;
                snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
                struct stat st;
                bool current = false;
                if (n > 66 && buf[64] == '\n') {
                        buf[n] = 0;
                        buf[strcspn(buf + 65, "\n") + 65] = 0;
                        buf[64] = 0;
                        if (stat(buf + 65, &st) == 0 && S_ISDIR(st.st_mode)) {
                                import_key(buf + 65, &st, key);
                                current = strcmp(key, de->d_name) == 0 && is_hex64(buf);
                        }
                }
                if (current)
                        refs_add(rf, buf);
                else
                        (void)unlink(path);
        }
        if (d)
                closedir(d);
}

int layer_store_gc(const char *state, int startup)
{
        struct refs rf = {};
        char base[4096], path[8192];
        int removed = 0;
        pthread_rwlock_wrlock(&store_lock);
        pthread_mutex_lock(&pin_lock);
        for (size_t i = 0; i < n_pins; i++)
                refs_add(&rf, pins[i].hex);
        pthread_mutex_unlock(&pin_lock);
        int r = refs_from_dir(state, "templates", "template.json", &rf);
        if (r >= 0)
                r = refs_from_dir(state, "sandboxes", "sandbox.json", &rf);
        /* the template build cache (server/template-build/README.md): one layer per cached step */
        if (r >= 0)
                r = refs_from_dir(state, "build/cache", "layer.json", &rf);
        if (r >= 0)
                imports_refs(state, &rf);
        snprintf(base, sizeof(base), "%s/layers", state);
        DIR *d = r >= 0 ? opendir(base) : NULL;
        struct dirent *de;
        while (d && (de = readdir(d))) {
                snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
                if ((is_hex64(de->d_name) && !refs_has(&rf, de->d_name) && !held(de->d_name)) ||
                    (startup && strncmp(de->d_name, ".tmp-", 5) == 0)) {
                        if (rm_rf(path) >= 0)
                                removed++;
                }
        }
        if (d)
                closedir(d);
        free(rf.hex);
        pthread_rwlock_unlock(&store_lock);
        return r < 0 ? r : removed;
}

int layer_store_usage(const char *state, size_t *ret_layers)
{
        char base[4096];
        size_t n = 0;
        snprintf(base, sizeof(base), "%s/layers", state);
        DIR *d = opendir(base);
        struct dirent *de;
        while (d && (de = readdir(d)))
                n += is_hex64(de->d_name);
        if (d)
                closedir(d);
        *ret_layers = n;
        return 0;
}

int layer_store_tmp_dir(const char *state, char *ret_path, size_t size)
{
        char rnd[17];
        int r = ensure_dirs(state);
        if (r < 0 || (r = random_hex(rnd, 8)) < 0)
                return r;
        if ((size_t)snprintf(ret_path, size, "%s/layers/.tmp-%s", state, rnd) >= size)
                return -ENAMETOOLONG;
        return mkdir(ret_path, 0700) < 0 ? -errno : 0;
}

static int hash_tree(int src, bool no_links, char *ret_hex)
{
        struct stat st;
        if (fstat(src, &st) < 0)
                return -errno;
        struct walk w = {.link = true, .no_links = no_links, .dev = st.st_dev};
        sha256_init(&w.h);
        layer_walk_hash_entry(&w, "", &st);
        int r = layer_walk_hash(&w, src);
        layer_walk_done(&w);
        if (r >= 0)
                sha256_final_hex(&w.h, ret_hex);
        return r;
}

static int adopt(const char *state, const char *tmp, const char *want, char *ret_hex)
{
        char final[4096], alt[LAYER_ID_MAX];
        _cleanup_close_ int src = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0)
                return -errno;
        int r = hash_tree(src, false, ret_hex);
        if (r < 0)
                return r;
        /* A layer put in the store from a template's dir (import_dir, hard links into the
         * template) was named with every name of a multiply-linked file hashed as a file: the
         * same tree, that encoding. Either names it; every byte is hashed in both. */
        if (want && strcmp(want, ret_hex) != 0 && hash_tree(src, true, alt) >= 0 &&
            strcmp(want, alt) == 0)
                memcpy(ret_hex, alt, LAYER_ID_MAX);
        if (want && strcmp(want, ret_hex) != 0)
                return -EBADMSG; /* the caller removes tmp */
        layer_store_path(state, ret_hex, final, sizeof(final));
        if (rename(tmp, final) < 0) {
                if (errno != EEXIST && errno != ENOTEMPTY)
                        return -errno;
                rm_rf(tmp); /* the same layer is stored already */
        }
        return 0;
}

int layer_store_adopt(const char *state, const char *tmp, char *ret_hex)
{
        return adopt(state, tmp, NULL, ret_hex);
}

int layer_store_adopt_verified(const char *state, const char *tmp, const char *want_hex,
                               char *ret_hex)
{
        return is_hex64(want_hex) ? adopt(state, tmp, want_hex, ret_hex) : -EINVAL;
}

int layer_store_has(const char *state, const char *hex)
{
        char path[4096];
        struct stat st;
        if (!is_hex64(hex))
                return -EINVAL;
        layer_store_path(state, hex, path, sizeof(path));
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* layers/.digests/<hex>: the store layer an image layer blob of that digest became. */
static void digest_path(const char *state, const char *digest_hex, char *buf, size_t size)
{
        snprintf(buf, size, "%s/layers/.digests/%s", state, digest_hex);
}

int layer_store_digest_lookup(const char *state, const char *digest_hex, char *ret_hex)
{
        char path[4096], have[4096], hex[LAYER_ID_MAX] = "";
        struct stat st;
        if (!is_hex64(digest_hex))
                return -EINVAL;
        digest_path(state, digest_hex, path, sizeof(path));
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (read(fd, hex, 64) != 64 || !is_hex64(hex))
                return 0;
        layer_store_path(state, hex, have, sizeof(have));
        if (stat(have, &st) < 0 || !S_ISDIR(st.st_mode))
                return 0; /* collected since: import it again */
        memcpy(ret_hex, hex, LAYER_ID_MAX);
        return 1;
}

int layer_store_digest_record(const char *state, const char *digest_hex, const char *hex)
{
        char dir[4096], path[4096], tmp[4200];
        if (!is_hex64(digest_hex) || !is_hex64(hex))
                return -EINVAL;
        snprintf(dir, sizeof(dir), "%s/layers/.digests", state);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return -errno;
        digest_path(state, digest_hex, path, sizeof(path));
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        _cleanup_close_ int fd =
            open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        int r = write_full(fd, hex, 64);
        if (r < 0)
                return r;
        return rename(tmp, path) < 0 ? -errno : 0;
}
