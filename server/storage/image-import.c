/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/image-import.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "format-util.h"
#include "json-util.h"
#include "macros.h"
#include "missing-syscalls.h"
#include "random-util.h"
#include "sha256.h"
#include "storage/image-admit.h"
#include "storage/image-layer.h"
#include "storage/json-record.h"
#include "storage/layer-store.h"

#define READ_CHUNK    (64 * 1024)
#define MAX_LINKS     4096 /* symlinks/hard links among the archive's own members */
#define MAX_LINK_HOPS 8

_printf_(2, 3) static int bad(char *err, const char *fmt, ...)
{
        (void)FORMAT_VARARGS(err, IMAGE_ERR_MAX, fmt);
        return -EINVAL;
}

static bool valid_chars(const char *s, size_t max, bool first_upper_ok)
{
        size_t l = s ? strlen(s) : 0;
        if (l == 0 || l > max)
                return false;
        for (size_t i = 0; i < l; i++) {
                char ch = s[i];
                bool lower = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
                bool upper = ch >= 'A' && ch <= 'Z';
                if (i == 0 ? !(lower || (first_upper_ok && (upper || ch == '_')))
                           : !(lower || (first_upper_ok && upper) || strchr("._-", ch)))
                        return false;
        }
        return !strstr(s, "..");
}

int image_template_id(const char *name, const char *tag, char ret[static IMAGE_ID_MAX])
{
        if (!valid_chars(name, IMAGE_NAME_MAX, false))
                return -EINVAL;
        if (tag && strcmp(tag, "latest") != 0) {
                if (!valid_chars(tag, IMAGE_TAG_MAX, true) ||
                    strlen(name) + 1 + strlen(tag) > TEMPLATE_NAME_MAX)
                        return -EINVAL;
                if ((size_t)snprintf(ret, IMAGE_ID_MAX, "%s:%s", name, tag) >= IMAGE_ID_MAX)
                        return -EINVAL;
        } else {
                snprintf(ret, IMAGE_ID_MAX, "%s", name);
        }
        return 0;
}

/* ---- the outer archive ---- */

static int open_archive(struct archive *a)
{
        /* Built-in decompressors only: a filter libarchive would run as an external program
         * (ARCHIVE_WARN) is never enabled for untrusted input. */
        if (archive_read_support_format_tar(a) != ARCHIVE_OK ||
            archive_read_support_filter_gzip(a) != ARCHIVE_OK ||
            archive_read_support_filter_zstd(a) != ARCHIVE_OK ||
            archive_read_support_filter_xz(a) != ARCHIVE_OK ||
            archive_read_support_filter_bzip2(a) != ARCHIVE_OK)
                return -ENOTSUP;
        return 0;
}

static void archive_freep(struct archive **a)
{
        if (*a)
                archive_read_free(*a);
}
#define _cleanup_archive_ _cleanup_(archive_freep)

static int open_outer(int fd, struct archive **ret, char *err)
{
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        struct archive *a = archive_read_new();
        if (!a)
                return -ENOMEM;
        int r = open_archive(a);
        if (r < 0 || archive_read_open_fd(a, fd, READ_CHUNK) != ARCHIVE_OK) {
                if (r >= 0)
                        r = bad(err, "not a tar archive: %s", archive_error_string(a));
                archive_read_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

static const char *member_path(struct archive_entry *e)
{
        const char *p = archive_entry_pathname(e);
        while (p && strncmp(p, "./", 2) == 0)
                p += 2;
        return p;
}

/* The outer archive's next header at *e: 1, 0 at the archive's end, or the error. */
static int next_header(struct archive *a, struct archive_entry **e, char *err)
{
        int k = archive_read_next_header(a, e);
        if (k == ARCHIVE_EOF)
                return 0;
        if (k < ARCHIVE_WARN)
                return bad(err, "the archive is not a readable tar: %s", archive_error_string(a));
        return 1;
}

/* The next regular file of the outer archive (where layers are), its path at *ret: 1, 0 at
 * the archive's end, or the error. */
static int next_regular_member(struct archive *a, const char **ret, char *err)
{
        struct archive_entry *e;
        int r;
        while ((r = next_header(a, &e, err)) > 0) {
                const char *path = member_path(e);
                if (path && archive_entry_filetype(e) == AE_IFREG && !archive_entry_hardlink(e)) {
                        *ret = path;
                        return 1;
                }
        }
        return r;
}

struct links {
        char *from[MAX_LINKS], *to[MAX_LINKS];
        size_t n;
};

static void links_done(struct links *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->from[i]);
                free(l->to[i]);
        }
        l->n = 0;
}

/* A member that is a symlink (relative to its dir) or a hard link to another member, as the
 * member path it names. docker save links duplicate layers that way. */
static int links_add(struct links *l, const char *path, struct archive_entry *e)
{
        const char *hard = archive_entry_hardlink(e), *sym = archive_entry_symlink(e);
        char target[4096];
        if (hard) {
                while (strncmp(hard, "./", 2) == 0)
                        hard += 2;
                snprintf(target, sizeof(target), "%s", hard);
        } else if (sym) {
                const char *slash = strrchr(path, '/');
                int dl = slash ? (int)(slash - path) : 0;
                /* "../<id>/layer.tar" from "<id2>/layer.tar" */
                while (strncmp(sym, "../", 3) == 0 && dl > 0) {
                        sym += 3;
                        const char *up = memrchr(path, '/', (size_t)dl);
                        dl = up ? (int)(up - path) : 0;
                }
                snprintf(target, sizeof(target), "%.*s%s%s", dl, path, dl ? "/" : "", sym);
        } else {
                return 0;
        }
        if (l->n == MAX_LINKS)
                return -E2BIG;
        l->from[l->n] = strdup(path);
        l->to[l->n] = strdup(target);
        if (!l->from[l->n] || !l->to[l->n]) {
                free(l->from[l->n]);
                free(l->to[l->n]);
                return -ENOMEM;
        }
        l->n++;
        return 0;
}

static const char *links_resolve(const struct links *l, const char *path)
{
        for (int hop = 0; hop < MAX_LINK_HOPS; hop++) {
                size_t i;
                for (i = l->n; i-- > 0;)
                        if (strcmp(l->from[i], path) == 0)
                                break;
                if (i == (size_t)-1)
                        return path;
                path = l->to[i];
        }
        return path;
}

static bool is_meta(const char *path, int64_t size)
{
        size_t l = strlen(path);
        return size >= 0 && size <= IMAGE_MAX_JSON &&
               (strcmp(path, "oci-layout") == 0 || strncmp(path, "blobs/", 6) == 0 ||
                (l > 5 && strcmp(path + l - 5, ".json") == 0) || strcmp(path, "repositories") == 0);
}

/* Pass 1: the small members (manifests, configs) into memory, the links among members. */
static int scan(int fd, struct image_members *m, struct links *l, char *err)
{
        _cleanup_archive_ struct archive *a = NULL;
        _cleanup_free_ char *buf = malloc(IMAGE_MAX_JSON);
        struct archive_entry *e;
        size_t members = 0;
        int r = buf ? open_outer(fd, &a, err) : -ENOMEM;
        if (r < 0)
                return r;
        while ((r = next_header(a, &e, err)) > 0) {
                if (++members > IMAGE_MAX_MEMBERS)
                        return bad(err, "the archive has more than %u members", IMAGE_MAX_MEMBERS);
                const char *path = member_path(e);
                if (!path || !*path)
                        continue;
                if (archive_entry_hardlink(e) || archive_entry_filetype(e) == AE_IFLNK) {
                        if ((r = links_add(l, path, e)) < 0)
                                return r == -E2BIG ? bad(err, "the archive has more than %d links",
                                                         MAX_LINKS)
                                                   : r;
                        continue;
                }
                if (archive_entry_filetype(e) != AE_IFREG || !is_meta(path, archive_entry_size(e)))
                        continue;
                la_ssize_t n = archive_read_data(a, buf, IMAGE_MAX_JSON);
                if (n < 0)
                        return bad(err, "the archive is not readable at %.200s: %s", path,
                                   archive_error_string(a));
                if (m->total + (size_t)n > IMAGE_MAX_META)
                        return bad(err, "the archive's manifests and configs exceed %u bytes",
                                   IMAGE_MAX_META);
                if ((r = image_members_add(m, path, buf, (size_t)n)) < 0)
                        return r;
        }
        return r;
}

/* ---- pass 2: the layers' digests; pass 3: the layers ---- */

/* The member at the outer archive's position, its bytes hashed to the end. */
static int hash_member(struct archive *outer, char ret_hex[static 65], char *err)
{
        _cleanup_free_ char *buf = malloc(READ_CHUNK);
        struct sha256 h;
        la_ssize_t n;
        if (!buf)
                return -ENOMEM;
        sha256_init(&h);
        while ((n = archive_read_data(outer, buf, READ_CHUNK)) > 0)
                sha256_update(&h, buf, (size_t)n);
        if (n < 0)
                return bad(err, "the archive is not readable: %s", archive_error_string(outer));
        sha256_final_hex(&h, ret_hex);
        return 0;
}

/* Each member a layer needs (outs[i].hex still empty) hashed and compared with its digest
 * before anything is extracted: a blob that is not what the manifest names is refused
 * whole, and nothing of a bomb is decompressed for a layer that fails its digest. */
static int verify_layers(int fd, const struct image_plan *p, const struct links *links,
                         const struct image_layer_out *outs, char *err)
{
        _cleanup_archive_ struct archive *a = NULL;
        _cleanup_free_ bool *seen = calloc(p->n_layers, sizeof(*seen));
        const char *path;
        char got[65];
        int r = seen ? open_outer(fd, &a, err) : -ENOMEM;
        if (r < 0)
                return r;
        while ((r = next_regular_member(a, &path, err)) > 0) {
                bool hashed = false;
                for (size_t i = 0; i < p->n_layers; i++) {
                        if (outs[i].hex[0] ||
                            strcmp(links_resolve(links, p->layers[i].path), path) != 0)
                                continue;
                        if (!hashed && (r = hash_member(a, got, err)) < 0)
                                return r;
                        hashed = true;
                        if (strcmp(got, p->layers[i].digest) != 0)
                                return bad(err, "layer %.200s does not match its digest sha256:%s",
                                           p->layers[i].path, p->layers[i].digest);
                        seen[i] = true;
                }
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < p->n_layers; i++)
                if (!outs[i].hex[0] && !seen[i])
                        return bad(err, "layer %.200s is not in the archive", p->layers[i].path);
        return 0;
}

struct inner_src {
        struct archive *outer;
        char buf[READ_CHUNK];
};

static la_ssize_t inner_read(struct archive *a, void *ud, const void **ret)
{
        struct inner_src *s = ud;
        la_ssize_t n = archive_read_data(s->outer, s->buf, sizeof(s->buf));
        *ret = s->buf;
        return n < 0 ? ARCHIVE_FATAL : n;
}

int image_layer_open(struct archive **ret)
{
        struct archive *a = archive_read_new();
        if (!a)
                return -ENOMEM;
        int r = open_archive(a);
        if (r < 0) {
                archive_read_free(a);
                return r;
        }
        *ret = a;
        return 0;
}

int image_layer_store(const char *state, struct archive *inner, const char *digest,
                      struct image_admission *adm, struct image_layer_out *out,
                      char err[static IMAGE_ERR_MAX])
{
        char tmp[4096], lerr[IMAGE_LAYER_ERR_MAX], what[96];
        int r = layer_store_tmp_dir(state, tmp, sizeof(tmp));
        if (r < 0)
                return r;
        _cleanup_close_ int root = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        snprintf(what, sizeof(what), "layer sha256:%.12s", digest);
        if (root < 0)
                r = -errno;
        else
                r = image_layer_extract(inner, root, adm, what, &out->st, lerr);
        if (r == -EINVAL)
                bad(err, "layer sha256:%.16s… refused: %s", digest, lerr);
        else if (r == -EFBIG || r == -ENOSPC)
                snprintf(err, IMAGE_ERR_MAX, "%s", lerr);
        if (r >= 0)
                r = layer_store_adopt(state, tmp, out->hex);
        if (r < 0) {
                rm_rf(tmp);
                return r;
        }
        return layer_store_digest_record(state, digest, out->hex);
}

/* One layer member, verified already (verify_layers): extracted into a temp dir of the store,
 * adopted into the store. */
static int import_layer(const char *state, struct archive *outer, const struct image_layer_ref *ref,
                        struct image_admission *adm, struct image_layer_out *out, char *err)
{
        _cleanup_free_ struct inner_src *src = calloc(1, sizeof(*src));
        struct archive *inner = NULL;
        if (!src)
                return -ENOMEM;
        src->outer = outer;
        int r = image_layer_open(&inner);
        if (r >= 0 && archive_read_open(inner, src, NULL, inner_read, NULL) != ARCHIVE_OK)
                r = bad(err, "layer %.16s… is not a tar archive: %s", ref->digest,
                        archive_error_string(inner));
        if (r >= 0)
                r = image_layer_store(state, inner, ref->digest, adm, out, err);
        if (inner)
                archive_read_free(inner);
        return r;
}

static int import_layers(const char *state, int fd, const struct image_plan *p,
                         const struct links *links, struct image_admission *adm,
                         struct image_layer_out *outs, char *err)
{
        size_t todo = 0;
        for (size_t i = 0; i < p->n_layers; i++) {
                int r = layer_store_digest_lookup(state, p->layers[i].digest, outs[i].hex);
                if (r < 0)
                        return r;
                outs[i].reused = r > 0;
                todo += r == 0;
        }
        if (todo == 0)
                return 0;
        int r = verify_layers(fd, p, links, outs, err);
        if (r < 0)
                return r;
        _cleanup_archive_ struct archive *a = NULL;
        const char *path;
        if ((r = open_outer(fd, &a, err)) < 0)
                return r;
        while (todo > 0 && (r = next_regular_member(a, &path, err)) > 0) {
                ssize_t first = -1;
                for (size_t i = 0; i < p->n_layers; i++) {
                        if (outs[i].hex[0] ||
                            strcmp(links_resolve(links, p->layers[i].path), path) != 0)
                                continue;
                        if (first < 0) {
                                if ((r = import_layer(state, a, &p->layers[i], adm, &outs[i],
                                                      err)) < 0)
                                        return r;
                                first = (ssize_t)i;
                        } else {
                                memcpy(outs[i].hex, outs[first].hex, LAYER_ID_MAX);
                        }
                        todo--;
                }
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < p->n_layers; i++)
                if (!outs[i].hex[0])
                        return bad(err, "layer %.200s is not in the archive", p->layers[i].path);
        return 0;
}

/* ---- the template ---- */

static void now_rfc3339(char buf[32])
{
        time_t t = time(NULL);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cJSON *env_object(const cJSON *env)
{
        cJSON *o = cJSON_CreateObject(), *e;
        cJSON_ArrayForEach(e, env)
        {
                const char *eq = strchr(e->valuestring, '=');
                if (!eq || eq == e->valuestring)
                        continue;
                _cleanup_free_ char *k = strndup(e->valuestring, (size_t)(eq - e->valuestring));
                if (!k)
                        continue;
                cJSON_DeleteItemFromObjectCaseSensitive(o, k);
                cJSON_AddStringToObject(o, k, eq + 1);
        }
        return o;
}

/* template.json of the imported image, its "image" object with extra's members over it. */
static int build_template(const char *state, const char *id, const char *name, const char *tag,
                          const struct image_plan *p, const struct image_layer_out *outs,
                          const cJSON *extra, cJSON **ret_json, cJSON *warnings)
{
        _cleanup_json_ cJSON *j = cJSON_CreateObject();
        cJSON *layers = cJSON_AddArrayToObject(j, "layers");
        cJSON *img = cJSON_CreateObject(), *ilayers = cJSON_AddArrayToObject(img, "layers");
        uint64_t size = 0, devices = 0, xattrs = 0;
        char buf[128], when[32];
        if (!j || !layers || !img || !ilayers) {
                cJSON_Delete(img);
                return -ENOMEM;
        }
        cJSON_AddStringToObject(j, "name", id);
        for (size_t i = 0; i < p->n_layers; i++) {
                snprintf(buf, sizeof(buf), LAYER_PREFIX "%s", outs[i].hex);
                cJSON_AddItemToArray(layers, cJSON_CreateString(buf));
                cJSON *l = cJSON_CreateObject();
                snprintf(buf, sizeof(buf), "sha256:%s", p->layers[i].digest);
                cJSON_AddStringToObject(l, "digest", buf);
                snprintf(buf, sizeof(buf), LAYER_PREFIX "%s", outs[i].hex);
                cJSON_AddStringToObject(l, "layer", buf);
                cJSON_AddBoolToObject(l, "reused", outs[i].reused);
                cJSON_AddItemToArray(ilayers, l);
                size += outs[i].st.bytes;
                devices += outs[i].st.skipped_devices;
                xattrs += outs[i].st.dropped_xattrs;
                if (outs[i].st.skipped_devices) {
                        snprintf(buf, sizeof(buf), "%.40s", outs[i].st.first_device);
                        char msg[256];
                        snprintf(msg, sizeof(msg),
                                 "layer %zu: %llu device node(s) skipped (first: '%s'); sandboxes "
                                 "get their own /dev",
                                 i + 1, (unsigned long long)outs[i].st.skipped_devices, buf);
                        cJSON_AddItemToArray(warnings, cJSON_CreateString(msg));
                }
        }
        cJSON_AddNumberToObject(j, "cpuCount", 2);
        cJSON_AddNumberToObject(j, "memoryMB", 1024);
        cJSON_AddNumberToObject(j, "diskSizeMB", 1024);
        if (p->env)
                cJSON_AddItemToObject(j, "env", env_object(p->env));

        /* As E2B's build: the template's default user is "user" in its home, whatever the
         * image's User and WorkingDir (kept in "image"); the agent adds that user where the
         * image lacks it (guest-agent/core/provision.h). */
        cJSON *envd = cJSON_AddObjectToObject(j, "envd");
        cJSON_AddStringToObject(envd, "defaultUser", IMAGE_DEFAULT_USER);
        cJSON_AddStringToObject(envd, "defaultWorkdir", IMAGE_DEFAULT_WORKDIR);

        cJSON_AddStringToObject(img, "name", name);
        cJSON_AddStringToObject(img, "tag", tag ? tag : "latest");
        cJSON_AddStringToObject(img, "template", id);
        cJSON_AddStringToObject(img, "digest", p->digest);
        cJSON_AddStringToObject(img, "format", p->oci ? "oci" : "docker");
        now_rfc3339(when);
        cJSON_AddStringToObject(img, "importedAt", when);
        cJSON_AddNumberToObject(img, "writtenBytes", (double)size);
        cJSON_AddStringToObject(img, "user", p->user ? p->user : "");
        cJSON_AddStringToObject(img, "workingDir", p->workdir ? p->workdir : "");
        cJSON_AddItemToObject(img, "env",
                              p->env ? cJSON_Duplicate(p->env, 1) : cJSON_CreateArray());
        cJSON_AddItemToObject(img, "entrypoint",
                              p->entrypoint ? cJSON_Duplicate(p->entrypoint, 1)
                                            : cJSON_CreateArray());
        cJSON_AddItemToObject(img, "cmd",
                              p->cmd ? cJSON_Duplicate(p->cmd, 1) : cJSON_CreateArray());
        cJSON_AddNumberToObject(img, "skippedDevices", (double)devices);
        cJSON_AddNumberToObject(img, "droppedXattrs", (double)xattrs);
        const cJSON *x;
        cJSON_ArrayForEach(x, extra)
        {
                cJSON_DeleteItemFromObjectCaseSensitive(img, x->string);
                cJSON_AddItemToObject(img, x->string, cJSON_Duplicate(x, 1));
        }
        cJSON_AddItemToObject(j, "image", img);
        *ret_json = TAKE_PTR(j);
        return 0;
}

static int write_template(const char *state, const char *id, const cJSON *j)
{
        char dir[4096], tmp[4096], file[4200], rnd[17];
        _cleanup_free_ char *text = cJSON_PrintUnformatted(j);
        int r = random_hex(rnd, 8);
        if (!text)
                return -ENOMEM;
        if (r < 0)
                return r;
        snprintf(dir, sizeof(dir), "%s/templates/%s", state, id);
        snprintf(tmp, sizeof(tmp), "%s/templates/.%s.import-%s", state, id, rnd);
        if (mkdir(tmp, 0755) < 0)
                return -errno;
        snprintf(file, sizeof(file), "%s/template.json", tmp);
        _cleanup_close_ int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 || (r = write_full(fd, text, strlen(text))) < 0 || fsync(fd) < 0) {
                r = fd < 0 || r >= 0 ? -errno : r;
                rm_rf(tmp);
                return r;
        }
        /* replace an older import of the same id in one step: sandboxes name layers, not it */
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0)
                return rm_rf(tmp);
        if (errno == ENOENT && rename(tmp, dir) == 0)
                return 0;
        r = -errno;
        rm_rf(tmp);
        return r;
}

static cJSON *read_json(const char *state, const char *id)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/templates/%s/template.json", state, id);
        return json_file_read(path, 1024 * 1024);
}

int image_template_check(const char *state, const char *name, const char *tag,
                         char ret_id[static IMAGE_ID_MAX], char err[static IMAGE_ERR_MAX])
{
        if (image_template_id(name, tag, ret_id) < 0)
                return bad(err, "invalid image name '%.60s%s%.40s'", name, tag ? ":" : "",
                           tag ? tag : "");
        _cleanup_json_ cJSON *old = read_json(state, ret_id);
        if (old && !cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(old, "image"))) {
                snprintf(err, IMAGE_ERR_MAX, "template '%s' exists and is not an image", ret_id);
                return -EEXIST;
        }
        return 0;
}

int image_template_publish(const char *state, const char *name, const char *tag,
                           const struct image_plan *p, const struct image_layer_out *outs,
                           const cJSON *extra, cJSON **ret, char err[static IMAGE_ERR_MAX])
{
        char id[IMAGE_ID_MAX];
        _cleanup_json_ cJSON *j = NULL;
        _cleanup_json_ cJSON *warnings = cJSON_CreateArray();
        int r = image_template_check(state, name, tag, id, err);
        if (r < 0)
                return r;
        if (!warnings)
                return -ENOMEM;
        r = build_template(state, id, name, tag, p, outs, extra, &j, warnings);
        if (r >= 0)
                r = write_template(state, id, j);
        if (r < 0)
                return r;
        cJSON *img = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(j, "image"), 1);
        if (!img)
                return -ENOMEM;
        cJSON_AddItemToObject(img, "warnings", TAKE_PTR(warnings));
        *ret = img;
        return 0;
}

int image_import(const char *state, int fd, const char *name, const char *tag, const char *ref,
                 const struct image_limits *lim, cJSON **ret, char err[static IMAGE_ERR_MAX])
{
        char id[IMAGE_ID_MAX];
        struct image_members m = {};
        struct image_plan p = {};
        struct image_admission adm = {.state = state, .lim = *lim};
        _cleanup_free_ struct links *links = calloc(1, sizeof(*links));
        _cleanup_free_ struct image_layer_out *outs = calloc(IMAGE_MAX_LAYERS, sizeof(*outs));
        err[0] = 0;
        int r = image_template_check(state, name, tag, id, err);
        if (r < 0)
                return r;
        if (!links || !outs)
                return -ENOMEM;
        layer_store_read_lock(); /* no gc between a layer's adoption and the template */
        r = scan(fd, &m, links, err);
        if (r >= 0)
                r = image_plan_resolve(&m, ref, "amd64", &p, err);
        if (r >= 0)
                r = import_layers(state, fd, &p, links, &adm, outs, err);
        image_admit_done(&adm);
        if (r >= 0)
                r = image_template_publish(state, name, tag, &p, outs, NULL, ret, err);
        layer_store_unlock();
        image_plan_done(&p);
        image_members_done(&m);
        links_done(links);
        return r;
}

static cJSON *image_of(const char *state, const char *id)
{
        _cleanup_json_ cJSON *j = read_json(state, id);
        cJSON *img = cJSON_GetObjectItemCaseSensitive(j, "image");
        return cJSON_IsObject(img) ? cJSON_Duplicate(img, 1) : NULL;
}

static int cmp_imported(const void *a, const void *b)
{
        const char *x = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)a, "importedAt"));
        const char *y = cJSON_GetStringValue(
            cJSON_GetObjectItemCaseSensitive(*(cJSON *const *)b, "importedAt"));
        return strcmp(y ? y : "", x ? x : "");
}

int image_list(const char *state, cJSON **ret)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/templates", state);
        cJSON *v[1024];
        size_t n = 0;
        DIR *d = opendir(path);
        struct dirent *de;
        while (d && n < ELEMENTSOF(v) && (de = readdir(d)))
                if (de->d_name[0] != '.' && (v[n] = image_of(state, de->d_name)))
                        n++;
        if (d)
                closedir(d);
        if (n)
                qsort(v, n, sizeof(*v), cmp_imported);
        cJSON *a = cJSON_CreateArray();
        for (size_t i = 0; i < n; i++)
                if (!a || !cJSON_AddItemToArray(a, v[i]))
                        cJSON_Delete(v[i]);
        if (!a)
                return -ENOMEM;
        *ret = a;
        return 0;
}

int image_get(const char *state, const char *id, cJSON **ret)
{
        if (!id || !*id || id[0] == '.' || strchr(id, '/'))
                return -ENOENT;
        cJSON *img = image_of(state, id);
        if (!img)
                return -ENOENT;
        *ret = img;
        return 0;
}

int image_remove(const char *state, const char *id)
{
        char dir[4096];
        if (!id || !*id || id[0] == '.' || strchr(id, '/'))
                return -ENOENT;
        _cleanup_json_ cJSON *j = read_json(state, id);
        if (!j)
                return -ENOENT;
        if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "image")))
                return -EPERM;
        snprintf(dir, sizeof(dir), "%s/templates/%s", state, id);
        int r = rm_rf(dir);
        if (r < 0)
                return r;
        r = layer_store_gc(state, 0);
        return r < 0 ? r : 0;
}
