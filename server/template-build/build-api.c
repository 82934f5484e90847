/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The E2B template API's operations on the build records (docs/e2b-wire.md §2.8): request a
 * build, upload links, start, status and logs, aliases, tags, list, get, delete. The e2b
 * routes (e2b/routes-templates.c) parse HTTP and answer; everything here runs under the
 * service's lock.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "template-build/build-internal.h"
#include "core/keys.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "random-util.h"
#include "sha256.h"

static bool alias_valid(const char *s)
{
        size_t l = strlen(s);
        if (l == 0 || l > BUILD_ALIAS_MAX ||
            !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
                return false;
        for (size_t i = 0; i < l; i++)
                if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-' &&
                    s[i] != '_')
                        return false;
        return true;
}

/* 8-4-4-4-12 hex digits, or 32 without the dashes: E2B refuses such tags (a tag must not be
 * mistaken for a build id). */
static bool is_uuid(const char *s)
{
        size_t l = strlen(s), hex = 0;
        if (l != 36 && l != 32)
                return false;
        for (size_t i = 0; i < l; i++) {
                if (l == 36 && (i == 8 || i == 13 || i == 18 || i == 23)) {
                        if (s[i] != '-')
                                return false;
                } else if (isxdigit((unsigned char)s[i]))
                        hex++;
        }
        return hex == 32;
}

void build_tag_lower(char *s)
{
        for (; *s; s++)
                *s = (char)tolower((unsigned char)*s);
}

bool build_tag_valid(const char *s)
{
        size_t l = strlen(s);
        if (l == 0 || l > BUILD_TAG_MAX || !(isalnum((unsigned char)s[0]) || s[0] == '_') ||
            strstr(s, "..") || is_uuid(s))
                return false;
        for (size_t i = 0; i < l; i++)
                if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
                        return false;
        return true;
}

static bool hex64(const char *s)
{
        size_t l = strlen(s);
        if (l != 64)
                return false;
        for (size_t i = 0; i < l; i++)
                if (!isxdigit((unsigned char)s[i]))
                        return false;
        return true;
}

static int new_uuid(char out[BUILD_ID_MAX])
{
        uint8_t u[16];
        int r = random_bytes(u, sizeof(u));
        if (r < 0)
                return r;
        u[6] = (u[6] & 0x0f) | 0x40;
        u[8] = (u[8] & 0x3f) | 0x80;
        snprintf(out, BUILD_ID_MAX,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
                 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
                 u[15]);
        return 0;
}

static bool sbx_template_exists(struct build_service *b, const char *name)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/templates/%s/template.json", b->state, name);
        return access(path, F_OK) == 0;
}

static bool has_tag_string(const cJSON *a, const char *s)
{
        const cJSON *x;
        cJSON_ArrayForEach(x, a)
        {
                if (cJSON_IsString(x) && strcmp(x->valuestring, s) == 0)
                        return true;
        }
        return false;
}

/* Tags of a request: "name:tag" and tags[], "default" when none. */
static int request_tags(const cJSON *body, const char *name_tag, cJSON **ret, char *err)
{
        _cleanup_json_ cJSON *tags = cJSON_CreateArray();
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(body, "tags"), *t;
        if (name_tag)
                cJSON_AddItemToArray(tags, cJSON_CreateString(name_tag));
        if (in && !cJSON_IsNull(in) && !cJSON_IsArray(in))
                return ERR(-EINVAL, "tags must be an array of strings");
        cJSON_ArrayForEach(t, in)
        {
                if (!cJSON_IsString(t) || !build_tag_valid(t->valuestring))
                        return ERR(-EINVAL,
                                   "invalid tag: tags are [A-Za-z0-9_][A-Za-z0-9._-]*, at most %d "
                                   "characters, not a UUID",
                                   BUILD_TAG_MAX);
                build_tag_lower(t->valuestring);
                if (!has_tag_string(tags, t->valuestring))
                        cJSON_AddItemToArray(tags, cJSON_CreateString(t->valuestring));
        }
        if (cJSON_GetArraySize(tags) > BUILD_MAX_TAGS)
                return ERR(-EINVAL, "at most %d tags", BUILD_MAX_TAGS);
        if (cJSON_GetArraySize(tags) == 0)
                cJSON_AddItemToArray(tags, cJSON_CreateString("default"));
        *ret = TAKE_PTR(tags);
        return 0;
}

static int optional_uint(const cJSON *body, const char *name, unsigned min, unsigned max,
                         unsigned *ret, char *err)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(body, name);
        *ret = 0;
        if (!v || cJSON_IsNull(v))
                return 0;
        if (!cJSON_IsNumber(v) || v->valuedouble != (double)(unsigned)v->valuedouble ||
            v->valuedouble < min || v->valuedouble > max)
                return ERR(-EINVAL, "%s must be an integer %u..%u", name, min, max);
        *ret = (unsigned)v->valuedouble;
        return 0;
}

/* Drop the oldest builds of t past BUILD_KEEP_BUILDS that no tag names (records, logs). */
static void trim_builds(struct build_service *b, cJSON *t)
{
        cJSON *builds = cJSON_GetObjectItemCaseSensitive(t, "builds");
        const cJSON *tags = cJSON_GetObjectItemCaseSensitive(t, "tags");
        int i = 0;
        while (cJSON_GetArraySize(builds) > BUILD_KEEP_BUILDS && i < cJSON_GetArraySize(builds)) {
                const cJSON *x = cJSON_GetArrayItem(builds, i), *e;
                bool tagged = false;
                cJSON_ArrayForEach(e, tags)
                {
                        const char *eb = str(e, "buildID");
                        tagged |= eb && cJSON_IsString(x) && strcmp(eb, x->valuestring) == 0;
                }
                _cleanup_json_ cJSON *rec =
                    cJSON_IsString(x) ? brec_read(b, REC_BUILDS, x->valuestring) : NULL;
                const char *st = str(rec, "status");
                bool busy = st && (strcmp(st, "building") == 0 || strcmp(st, "waiting") == 0);
                if (tagged || busy || !cJSON_IsString(x)) {
                        i++;
                        continue;
                }
                brec_remove_build(b, x->valuestring);
                cJSON_DeleteItemFromArray(builds, i);
        }
}

static int find_or_create_template(struct build_service *b, const char *alias, char *tid,
                                   cJSON **ret_t, char *err)
{
        char tag[BUILD_TAG_MAX + 1], ts[32];
        if (brec_resolve(b, alias, tid, tag) >= 0) {
                *ret_t = brec_read(b, REC_TEMPLATES, tid);
                return *ret_t ? 0 : ERR(-EIO, "the record of template '%s' is unreadable", alias);
        }
        if (sbx_template_exists(b, alias))
                return ERR(-EEXIST,
                           "the name '%s' is taken by a template not built through this API (a "
                           "built-in template, an imported image or a snapshot)",
                           alias);
        char rnd[21];
        int r = random_hex(rnd, 10);
        if (r < 0)
                return r;
        snprintf(tid, BUILD_TEMPLATE_ID_MAX, "%s", rnd);
        build_now(ts);
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "templateID", tid);
        cJSON *names = cJSON_AddArrayToObject(t, "names");
        cJSON_AddItemToArray(names, cJSON_CreateString(alias));
        cJSON_AddStringToObject(t, "createdAt", ts);
        cJSON_AddStringToObject(t, "updatedAt", ts);
        cJSON_AddObjectToObject(t, "tags");
        cJSON_AddArrayToObject(t, "builds");
        cJSON_AddNumberToObject(t, "buildCount", 0);
        *ret_t = t;
        return 0;
}

int build_request(struct build_service *b, const cJSON *body, cJSON **ret, char *err)
{
        const char *name = str(body, "name") ? str(body, "name") : str(body, "alias");
        char alias[BUILD_ALIAS_MAX + BUILD_TAG_MAX + 3], tid[BUILD_TEMPLATE_ID_MAX],
            bid[BUILD_ID_MAX], ts[32];
        if (!name)
                return ERR(-EINVAL, "name is required");
        if (strlen(name) >= sizeof(alias))
                return ERR(-EINVAL, "invalid template name '%.64s...': too long", name);
        snprintf(alias, sizeof(alias), "%s", name);
        char *colon = strchr(alias, ':');
        if (colon) {
                *colon++ = 0;
                build_tag_lower(colon);
        }
        if (!alias_valid(alias))
                return ERR(-EINVAL,
                           "invalid template name '%s': [a-z0-9][a-z0-9_-]*, at most %d "
                           "characters, optionally :tag",
                           name, BUILD_ALIAS_MAX);
        if (colon && !build_tag_valid(colon))
                return ERR(-EINVAL,
                           "invalid tag '%s': [A-Za-z0-9_][A-Za-z0-9._-]*, at most %d "
                           "characters, not a UUID",
                           colon, BUILD_TAG_MAX);
        unsigned cpu = 0, mem = 0, disk = 0;
        _cleanup_json_ cJSON *tags = NULL;
        int r = request_tags(body, colon, &tags, err);
        if (r >= 0)
                r = optional_uint(body, "cpuCount", 1, 64, &cpu, err);
        if (r >= 0)
                r = optional_uint(body, "memoryMB", 128, 256 * 1024, &mem, err);
        if (r >= 0)
                r = optional_uint(body, "diskSizeMB", 256, 1024 * 1024, &disk, err);
        unsigned free_mb = 0;
        if (r >= 0)
                r = optional_uint(body, "minFreeDiskMb", 1, 1024 * 1024, &free_mb, err);
        const struct sbxd_config *c = b->srv->config;
        if (r >= 0 && cpu > c->max_cpus)
                r = ERR(-EINVAL, "cpuCount %u is above this server's limit of %u CPUs per sandbox",
                        cpu, c->max_cpus);
        if (r >= 0 && mem > c->max_memory_mb)
                r = ERR(-EINVAL, "memoryMB %u is above this server's limit of %llu MiB per sandbox",
                        mem, (unsigned long long)c->max_memory_mb);
        if (r >= 0)
                r = new_uuid(bid);
        if (r < 0)
                return r;
        build_now(ts);
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *t = NULL;
        r = find_or_create_template(b, alias, tid, &t, err);
        _cleanup_json_ cJSON *rec = cJSON_CreateObject();
        if (r >= 0) {
                cJSON_AddStringToObject(rec, "buildID", bid);
                cJSON_AddStringToObject(rec, "templateID", tid);
                cJSON_AddStringToObject(rec, "status", "waiting");
                cJSON_AddStringToObject(rec, "createdAt", ts);
                cJSON_AddStringToObject(rec, "updatedAt", ts);
                cJSON_AddItemToObject(rec, "tags", cJSON_Duplicate(tags, 1));
                if (cpu)
                        cJSON_AddNumberToObject(rec, "cpuCount", cpu);
                if (mem)
                        cJSON_AddNumberToObject(rec, "memoryMB", mem);
                if (disk)
                        cJSON_AddNumberToObject(rec, "diskSizeMB", disk);
                if (free_mb)
                        cJSON_AddNumberToObject(rec, "minFreeDiskMb", free_mb);
                cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(t, "builds"),
                                     cJSON_CreateString(bid));
                trim_builds(b, t);
                set_str(t, "updatedAt", ts);
                r = brec_write(b, REC_BUILDS, bid, rec);
        }
        if (r >= 0)
                r = brec_write(b, REC_TEMPLATES, tid, t);
        pthread_mutex_unlock(&b->lock);
        if (r < 0)
                return err[0] ? r : ERR(r, "recording the build failed: %s", strerror(-r));
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "templateID", tid);
        cJSON_AddStringToObject(o, "buildID", bid);
        cJSON_AddItemToObject(o, "aliases",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "names"), 1));
        cJSON_AddItemToObject(o, "names",
                              cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t, "names"), 1));
        cJSON_AddItemToObject(o, "tags", TAKE_PTR(tags));
        cJSON_AddFalseToObject(o, "public");
        log_info("build %s: requested for template %s (%s)", bid, tid, alias);
        *ret = o;
        return 0;
}

/* ---- copy uploads: <state>/build/files/<tid>/<hash> ---- */

static int files_dir(struct build_service *b, const char *tid, char *buf, size_t size)
{
        char top[4096];
        int r = brec_dir(b, "files", top, sizeof(top));
        if (r < 0)
                return r;
        if ((size_t)snprintf(buf, size, "%s/%s", top, tid) >= size)
                return -ENAMETOOLONG;
        return mkdir(buf, 0755) < 0 && errno != EEXIST ? -errno : 0;
}

int build_upload_path(struct build_service *b, const char *tid, const char *hash, char *buf,
                      size_t size)
{
        char dir[4096];
        int r = files_dir(b, tid, dir, sizeof(dir));
        if (r >= 0 && (size_t)snprintf(buf, size, "%s/%s", dir, hash) >= size)
                r = -ENAMETOOLONG;
        return r;
}

/* sha256(key | tid | hash | expires): an upload link is good for one file of one template,
 * until it expires, and only while the server's first API key stays. */
static void upload_token(struct build_service *b, const char *tid, const char *hash,
                         const char *expires, char out[65])
{
        struct sha256 h;
        char key[API_KEY_LEN + 1] = ""; /* none: a link no request can match a key for */
        (void)keys_first(&b->srv->keys, key);
        sha256_init(&h);
        const char *parts[] = {key, "|", tid, "|", hash, "|", expires};
        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                sha256_update(&h, parts[i], strlen(parts[i]));
        sha256_final_hex(&h, out);
        explicit_bzero(key, sizeof(key));
}

/* A template id as this API mints them: 20 lowercase hex digits (never a path). */
static bool tid_valid(const char *tid)
{
        size_t l = strlen(tid);
        if (l != BUILD_TEMPLATE_ID_MAX - 1)
                return false;
        for (size_t i = 0; i < l; i++)
                if (!isdigit((unsigned char)tid[i]) && !(tid[i] >= 'a' && tid[i] <= 'f'))
                        return false;
        return true;
}

static bool template_known(struct build_service *b, const char *tid)
{
        _cleanup_json_ cJSON *t = tid_valid(tid) ? brec_read(b, REC_TEMPLATES, tid) : NULL;
        return t != NULL;
}

int build_file_link(struct build_service *b, const char *tid, const char *hash,
                    const char *base_url, cJSON **ret, char *err)
{
        char path[4300], expires[24], token[65];
        if (!hex64(hash))
                return ERR(-EINVAL, "the files hash must be 64 hex digits");
        pthread_mutex_lock(&b->lock);
        bool known = template_known(b, tid);
        int r = known ? build_upload_path(b, tid, hash, path, sizeof(path)) : -ENOENT;
        pthread_mutex_unlock(&b->lock);
        if (r == -ENOENT)
                return ERR(r, "template '%s' not found", tid);
        if (r < 0)
                return ERR(r, "%s", strerror(-r));
        cJSON *o = cJSON_CreateObject();
        bool present = access(path, F_OK) == 0;
        cJSON_AddBoolToObject(o, "present", present);
        if (!present) {
                snprintf(expires, sizeof(expires), "%lld",
                         (long long)time(NULL) + BUILD_UPLOAD_LINK_S);
                upload_token(b, tid, hash, expires, token);
                size_t n = strlen(base_url) + 256;
                _cleanup_free_ char *url = malloc(n);
                if (url) {
                        snprintf(url, n, "%s/build-uploads/%s/%s?expires=%s&token=%s", base_url,
                                 tid, hash, expires, token);
                        cJSON_AddStringToObject(o, "url", url);
                }
                cJSON_AddObjectToObject(o, "headers");
        }
        *ret = o;
        return 0;
}

int build_upload_open(struct build_service *b, const char *tid, const char *hash,
                      const char *expires, const char *token, int *ret_fd, char *err)
{
        char want[65], dir[4096];
        if (!hex64(hash) || !expires || !token || !tid_valid(tid))
                return ERR(-EACCES, "invalid upload link");
        upload_token(b, tid, hash, expires, want);
        if (!const_time_streq(want, token))
                return ERR(-EACCES, "invalid upload link");
        if (strtoll(expires, NULL, 10) < (long long)time(NULL))
                return ERR(-EACCES, "the upload link expired: ask for a new one");
        pthread_mutex_lock(&b->lock);
        int r = template_known(b, tid) ? files_dir(b, tid, dir, sizeof(dir)) : -ENOENT;
        pthread_mutex_unlock(&b->lock);
        if (r < 0)
                return ERR(r, "template '%s' not found", tid);
        int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
        if (fd < 0)
                return ERR(-errno, "cannot store the upload: %s", strerror(errno));
        *ret_fd = fd;
        return 0;
}

int build_upload_commit(struct build_service *b, const char *tid, const char *hash, int fd,
                        char *err)
{
        char path[4300], tmp[4400], proc[64], rnd[17];
        int r = random_hex(rnd, 8);
        pthread_mutex_lock(&b->lock);
        if (r >= 0)
                r = build_upload_path(b, tid, hash, path, sizeof(path));
        pthread_mutex_unlock(&b->lock);
        if (r < 0)
                return ERR(r, "cannot store the upload: %s", strerror(-r));
        snprintf(tmp, sizeof(tmp), "%s.%s.tmp", path, rnd);
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        if (fsync(fd) < 0 || linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) < 0)
                return ERR(-errno, "cannot store the upload: %s", strerror(errno));
        if (rename(tmp, path) < 0) {
                r = -errno;
                unlink(tmp);
                return ERR(r, "cannot store the upload: %s", strerror(-r));
        }
        return 0;
}

/* ---- starting a build ---- */

static const char *const STEP_TYPES[] = {"RUN", "COPY", "ENV", "WORKDIR", "USER"};

static int check_step(struct build_service *b, const char *tid, const cJSON *s, int i, char *err)
{
        const char *type = str(s, "type");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(s, "args"), *a;
        bool known = false;
        for (size_t k = 0; type && k < ELEMENTSOF(STEP_TYPES); k++)
                known |= strcmp(type, STEP_TYPES[k]) == 0;
        if (!known)
                return ERR(-EINVAL,
                           "step %d: type '%s' is not one sbx builds (RUN, COPY, ENV, WORKDIR, "
                           "USER)",
                           i, type ? type : "");
        if (args && !cJSON_IsArray(args))
                return ERR(-EINVAL, "step %d: args must be an array of strings", i);
        cJSON_ArrayForEach(a, args)
        {
                if (!cJSON_IsString(a) || strlen(a->valuestring) > BUILD_MAX_STEP_ARG)
                        return ERR(-EINVAL, "step %d: each arg is a string of at most %d bytes", i,
                                   BUILD_MAX_STEP_ARG);
        }
        int n = cJSON_GetArraySize(args);
        bool ok = strcmp(type, "ENV") == 0    ? n >= 2 && n % 2 == 0
                  : strcmp(type, "COPY") == 0 ? n >= 2
                  : strcmp(type, "RUN") == 0  ? n >= 1 && n <= 2
                                              : n == 1;
        if (!ok)
                return ERR(-EINVAL, "step %d: wrong number of args for %s", i, type);
        if (strcmp(type, "COPY") == 0) {
                const char *h = str(s, "filesHash");
                char path[4300];
                if (!h || !hex64(h))
                        return ERR(-EINVAL, "step %d: COPY needs a filesHash of 64 hex digits", i);
                if (build_upload_path(b, tid, h, path, sizeof(path)) < 0 || access(path, F_OK) < 0)
                        return ERR(-EINVAL,
                                   "step %d: the files of COPY %s (hash %s) were not uploaded", i,
                                   cJSON_GetArrayItem(args, 0)->valuestring, h);
        }
        return 0;
}

static int check_spec(struct build_service *b, const char *tid, const cJSON *body, char *err)
{
        const char *img = str(body, "fromImage"), *tpl = str(body, "fromTemplate");
        bool has_img = img && *img, has_tpl = tpl && *tpl;
        if (has_img == has_tpl)
                return ERR(-EINVAL, "exactly one of fromImage or fromTemplate must be given");
        const cJSON *reg = cJSON_GetObjectItemCaseSensitive(body, "fromImageRegistry");
        if (reg && !cJSON_IsNull(reg)) {
                if (!has_img)
                        return ERR(-EINVAL, "fromImageRegistry goes with fromImage");
                int r = build_registry_check(reg, err);
                if (r < 0)
                        return r;
        }
        static const char *const cmds[] = {"startCmd", "readyCmd"};
        for (size_t k = 0; k < ELEMENTSOF(cmds); k++) {
                const cJSON *c = cJSON_GetObjectItemCaseSensitive(body, cmds[k]);
                if (c && !cJSON_IsNull(c) &&
                    (!cJSON_IsString(c) || strlen(c->valuestring) > BUILD_MAX_STEP_ARG))
                        return ERR(-EINVAL, "%s must be a string of at most %d bytes", cmds[k],
                                   BUILD_MAX_STEP_ARG);
        }
        const cJSON *steps = cJSON_GetObjectItemCaseSensitive(body, "steps"), *s;
        if (steps && !cJSON_IsNull(steps) && !cJSON_IsArray(steps))
                return ERR(-EINVAL, "steps must be an array");
        if (cJSON_GetArraySize(steps) > BUILD_MAX_STEPS)
                return ERR(-EINVAL, "at most %d steps", BUILD_MAX_STEPS);
        int i = 1;
        cJSON_ArrayForEach(s, steps)
        {
                int r = check_step(b, tid, s, i++, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The build record bid of template tid, or an error. Under the lock. */
static int build_record(struct build_service *b, const char *tid, const char *bid, cJSON **ret,
                        char *err)
{
        cJSON *rec = strlen(bid) < BUILD_ID_MAX && !strchr(bid, '/') && bid[0] != '.'
                         ? brec_read(b, REC_BUILDS, bid)
                         : NULL;
        const char *owner = str(rec, "templateID");
        if (!rec || !owner || strcmp(owner, tid) != 0) {
                cJSON_Delete(rec);
                return ERR(-ENOENT, "build '%s' of template '%s' not found", bid, tid);
        }
        *ret = rec;
        return 0;
}

int build_start(struct build_service *b, const char *tid, const char *bid, const cJSON *body,
                char *err)
{
        char ts[32];
        build_now(ts);
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *rec = NULL;
        int r = build_record(b, tid, bid, &rec, err);
        if (r >= 0 && cJSON_GetObjectItemCaseSensitive(rec, "spec"))
                r = ERR(-EBUSY, "build '%s' was started already", bid);
        if (r >= 0)
                r = check_spec(b, tid, body, err);
        const cJSON *reg = cJSON_GetObjectItemCaseSensitive(body, "fromImageRegistry");
        bool creds = r >= 0 && reg && !cJSON_IsNull(reg);
        if (r >= 0) {
                cJSON *spec = cJSON_Duplicate(body, 1);
                if (creds) /* the record keeps no secret */
                        cJSON_ReplaceItemInObjectCaseSensitive(spec, "fromImageRegistry",
                                                               build_registry_redacted(reg));
                cJSON_AddItemToObject(rec, "spec", spec);
                set_str(rec, "updatedAt", ts);
                r = build_enqueue(b, bid);
                if (r == -EDQUOT)
                        ERR(r, "too many template builds queued (at most %d wait)",
                            BUILD_MAX_QUEUED);
        }
        if (r >= 0) {
                r = brec_write(b, REC_BUILDS, bid, rec);
                if (r < 0)
                        ERR(r, "recording the build failed: %s", strerror(-r));
        }
        /* still under the lock: no worker has taken the build yet */
        if (r >= 0 && creds && (r = build_registry_keep(b, bid, reg)) < 0)
                ERR(r, "keeping the registry credentials failed");
        pthread_mutex_unlock(&b->lock);
        if (r >= 0)
                build_log(b, bid, NULL, "info", "Build queued (%d at once, the rest wait)",
                          BUILD_WORKERS);
        return r;
}

int build_status(struct build_service *b, const char *tid, const char *bid, size_t offset,
                 cJSON **ret, char *err)
{
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *rec = NULL;
        int r = build_record(b, tid, bid, &rec, err);
        cJSON *o = NULL, *entries = NULL;
        if (r >= 0) {
                o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "buildID", bid);
                cJSON_AddStringToObject(o, "templateID", tid);
                cJSON_AddStringToObject(o, "status",
                                        str(rec, "status") ? str(rec, "status") : "error");
                entries = cJSON_AddArrayToObject(o, "logEntries");
                cJSON_AddArrayToObject(o, "logs");
                r = brec_log_read(b, bid, offset, entries);
                cJSON *reason = cJSON_GetObjectItemCaseSensitive(rec, "reason");
                if (reason)
                        cJSON_AddItemToObject(o, "reason", cJSON_Duplicate(reason, 1));
        }
        pthread_mutex_unlock(&b->lock);
        if (r < 0) {
                cJSON_Delete(o);
                return err[0] ? r : ERR(r, "reading the build's log: %s", strerror(-r));
        }
        *ret = o;
        return 0;
}
