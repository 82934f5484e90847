/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Running one build (server/template-build/README.md "Steps and the cache"): the base, then each
 * step in order. ENV, USER and WORKDIR change the image's config; RUN and COPY run in a build
 * sandbox (build-step.c) and become a layer, cached under the hash of everything that
 * decides their result: the layers below, the config, the step itself and its files' hash.
 * An unchanged rebuild finds every layer in the cache and starts no sandbox. The result is
 * published as sbx templates (build-names.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "egress/egress.h"
#include "template-build/build-run.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "sha256.h"
#include "storage/json-record.h"
#include "storage/layer-store.h"
#include "time-util.h"

#define APT_CONF                                                                                   \
        "APT::Sandbox::User \"root\";\n"                                                           \
        "Acquire::http::Proxy \"http://127.0.0.1:3142\";\n"                                        \
        "Acquire::https::Proxy \"http://127.0.0.1:3142\";\n"

/* COPY: $1 source (as the SDK names it), $2 destination, $3 mode ("" none), $4 the archive (the
 * SDK's tar of what the source matched, paths relative to the build context). E2B's semantics
 * (and Docker's COPY): the source's base is the part before its first glob character, cut at
 * the last slash before it (doublestar's SplitPattern of "src/"); a directory there (a copied
 * folder, or the folder a glob matched in) is merged into the destination, its contents, not
 * itself: a glob in folder/ copied to folder gives folder/test.txt, not folder/folder/test.txt.
 * A file or a symlink goes to the destination's exact path, or inside it when it ends with a
 * slash or is a directory. mode applies to the files and directories copied (not to a
 * symlink). A source the archive does not hold fails the step. */
#define COPY_SCRIPT                                                                                \
        "set -e\n"                                                                                 \
        "src=$1; dest=$2; mode=$3\n"                                                               \
        "tmp=$(mktemp -d /tmp/.sbx-copy.XXXXXX); trap 'rm -rf \"$tmp\"' EXIT\n"                    \
        "tar -xf \"$4\" -C \"$tmp\" --no-same-owner\n"                                             \
        "p=\"$src/\"; pre=${p%%[*?[{]*}\n"                                                         \
        "case \"$pre\" in */*) base=${pre%/*};; *) base=.;; esac\n"                                \
        "entry=\"$tmp/${base:-.}\"\n"                                                              \
        "if [ -L \"$entry\" ] || [ -f \"$entry\" ]; then\n"                                        \
        "  [ -L \"$entry\" ] || [ -z \"$mode\" ] || chmod \"$mode\" \"$entry\"\n"                  \
        "  case \"$dest\" in */) mkdir -p \"$dest\";; *) mkdir -p \"$(dirname \"$dest\")\";; "     \
        "esac\n"                                                                                   \
        "  cp -a --remove-destination \"$entry\" \"$dest\"\n"                                      \
        "elif [ -d \"$entry\" ]; then\n"                                                           \
        "  [ -z \"$mode\" ] || chmod -R \"$mode\" \"$entry\"\n"                                    \
        "  mkdir -p \"$dest\"\n"                                                                   \
        "  (cd \"$entry\" && tar -cf - .) | tar -xf - -C \"$dest\" --keep-directory-symlink "      \
        "--no-overwrite-dir\n"                                                                     \
        "else\n"                                                                                   \
        "  echo \"source path does not exist: $src\" >&2; exit 1\n"                                \
        "fi\n"

/* COPY as root: $1 the destination. Prints the owner of the directory the copy writes into
 * (the nearest that exists) when root may not write it, so that the copy runs as that owner
 * instead of failing. Sandbox root holds CAP_DAC_OVERRIDE (guest-agent/core/users.h), so this
 * is rare now: a directory whose owner does not map into the sandbox, or a read-only one. */
#define COPY_OWNER_PROBE                                                                           \
        "d=$1; case \"$d\" in /*) ;; *) d=\"$PWD/$d\";; esac\n"                                    \
        "case \"$d\" in */) ;; *) [ -d \"$d\" ] || d=$(dirname \"$d\");; esac\n"                   \
        "while [ ! -e \"$d\" ]; do d=$(dirname \"$d\"); done\n"                                    \
        "[ -w \"$d\" ] || stat -c %U \"$d\"\n"

/* 'text' for a shell: single quotes, each ' as '\''. */
static char *shell_quote(const char *s)
{
        size_t n = 3;
        for (const char *p = s; *p; p++)
                n += *p == '\'' ? 4 : 1;
        char *out = malloc(n), *o = out;
        if (!out)
                return NULL;
        *o++ = '\'';
        for (const char *p = s; *p; p++) {
                if (*p == '\'') {
                        memcpy(o, "'\\''", 4);
                        o += 4;
                } else
                        *o++ = *p;
        }
        *o++ = '\'';
        *o = 0;
        return out;
}

static void run_done(struct run *x)
{
        cJSON_Delete(x->layers);
        cJSON_Delete(x->binds);
        cJSON_Delete(x->env);
        cJSON_Delete(x->pending_dirs);
        free(x->user);
        free(x->workdir);
        if (x->reg_password)
                explicit_bzero(x->reg_password, strlen(x->reg_password));
        free(x->reg_user);
        free(x->reg_password);
        egress_build_stop(x->egress);
        if (x->run_dir[0])
                rm_rf(x->run_dir);
}

/* The proxy's refusals in the build's log (the client in the sandbox may show only a status). */
static void egress_note(void *userdata, const char *message)
{
        struct run *x = userdata;
        char m[512];
        snprintf(m, sizeof(m), "%s", message);
        m[strcspn(m, "\n")] = 0;
        build_log(x->b, x->bid, NULL, "warn", "%s", m);
}

/* <state>/build/run/<bid>/ with apt.conf, files/ (links to the uploads of the COPY steps)
 * and the egress proxy's socket. */
static int prepare_run_dir(struct run *x, const cJSON *steps, char *err)
{
        char dir[4096], path[8400], up[4300];
        int r = brec_dir(x->b, "run", dir, sizeof(dir));
        if (r >= 0 && (size_t)snprintf(x->run_dir, sizeof(x->run_dir), "%s/%s", dir, x->bid) >=
                          sizeof(x->run_dir))
                r = -ENAMETOOLONG;
        if (r >= 0) {
                rm_rf(x->run_dir);
                if (mkdir(x->run_dir, 0755) < 0)
                        r = -errno;
        }
        snprintf(path, sizeof(path), "%s/files", x->run_dir);
        if (r >= 0 && mkdir(path, 0755) < 0)
                r = -errno;
        snprintf(path, sizeof(path), "%s/apt.conf", x->run_dir);
        if (r >= 0)
                r = write_file_atomic(path, APT_CONF, strlen(APT_CONF), 0644);
        const cJSON *s;
        cJSON_ArrayForEach(s, (r >= 0 ? steps : NULL))
        {
                const char *h = str(s, "filesHash");
                if (!h || strcmp(str(s, "type"), "COPY") != 0)
                        continue;
                pthread_mutex_lock(&x->b->lock);
                r = build_upload_path(x->b, x->tid, h, up, sizeof(up));
                pthread_mutex_unlock(&x->b->lock);
                snprintf(path, sizeof(path), "%s/files/%s", x->run_dir, h);
                if (r >= 0 && link(up, path) < 0 && errno != EEXIST)
                        r = -errno;
                if (r < 0)
                        return ERR(r, "the upload %s is gone: upload it again", h);
        }
        snprintf(path, sizeof(path), "%s/egress.sock", x->run_dir);
        if (r >= 0)
                r = egress_build_start(x->b->srv->egress, path, x->b->allow, x->b->n_allow,
                                       egress_note, x, &x->egress);
        return r < 0 ? ERR(r, "preparing the build failed: %s", strerror(-r)) : 0;
}

/* The cache key of running step s on x as it is now. */
static void step_key(const struct run *x, const cJSON *s, char out[65])
{
        struct sha256 h;
        sha256_init(&h);
        const cJSON *parts[] = {x->layers, x->binds, x->env, x->pending_dirs,
                                cJSON_GetObjectItemCaseSensitive(s, "args")};
        sha256_update(&h, "sbx-build-1", 12);
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                _cleanup_free_ char *t = parts[i] ? cJSON_PrintUnformatted(parts[i]) : NULL;
                sha256_update(&h, t ? t : "null", strlen(t ? t : "null") + 1);
        }
        const char *strs[] = {x->user, x->workdir, str(s, "type"), str(s, "filesHash")};
        for (size_t i = 0; i < ELEMENTSOF(strs); i++)
                sha256_update(&h, strs[i] ? strs[i] : "", strlen(strs[i] ? strs[i] : "") + 1);
        sha256_final_hex(&h, out);
}

static void cache_path(const struct run *x, const char *key, char *buf, size_t size)
{
        snprintf(buf, size, "%s/build/cache/%s/layer.json", x->b->state, key);
}

/* 1 with the cached layer in ret_hex, 0 when not cached (or collected since). */
static int cache_get(struct run *x, const char *key, char *ret_hex)
{
        char path[4300], layer[4300];
        cache_path(x, key, path, sizeof(path));
        _cleanup_json_ cJSON *j = json_file_read(path, 4096);
        const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "layers"), 0);
        if (!cJSON_IsString(l) || strlen(l->valuestring) != strlen(LAYER_PREFIX) + 64)
                return 0;
        const char *hex = l->valuestring + strlen(LAYER_PREFIX);
        layer_store_path(x->b->state, hex, layer, sizeof(layer));
        if (access(layer, F_OK) < 0)
                return 0;
        memcpy(ret_hex, hex, 65);
        return 1;
}

void build_cache_put(struct run *x, const char *key, const cJSON *refs)
{
        char dir[4096], path[4300], sub[128];
        snprintf(sub, sizeof(sub), "cache/%s", key);
        if (brec_dir(x->b, "cache", dir, sizeof(dir)) < 0 ||
            brec_dir(x->b, sub, dir, sizeof(dir)) < 0)
                return;
        cache_path(x, key, path, sizeof(path));
        _cleanup_json_ cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "layers", cJSON_Duplicate(refs, 1));
        _cleanup_free_ char *text = cJSON_PrintUnformatted(j);
        if (text)
                (void)write_file_atomic(path, text, strlen(text), 0644);
}

/* The environment a step's commands get: the image's, plus the egress proxy. */
static cJSON *step_env(const struct run *x)
{
        cJSON *e = cJSON_Duplicate(x->env, 1);
        static const char *const proxy[] = {"http_proxy", "https_proxy", "HTTP_PROXY",
                                            "HTTPS_PROXY"};
        for (size_t i = 0; i < ELEMENTSOF(proxy); i++)
                if (!cJSON_GetObjectItemCaseSensitive(e, proxy[i]))
                        cJSON_AddStringToObject(e, proxy[i], "http://127.0.0.1:3142");
        cJSON_AddStringToObject(e, "no_proxy", "localhost,127.0.0.1");
        cJSON_AddStringToObject(e, "APT_CONFIG", BUILD_RUN_MOUNT "/apt.conf");
        return e;
}

/* A RUN or COPY step (or only the pending WORKDIRs when s is NULL): from the cache, or in a
 * build sandbox. */
static int exec_step(struct run *x, const cJSON *s, const char *what, char *err)
{
        char key[65], hex[LAYER_ID_MAX];
        bool force = x->force || cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "force"));
        step_key(x, s, key);
        if (!force && cache_get(x, key, hex)) {
                run_log(x, "info", "CACHED %s", what);
                x->cached++;
                layer_store_ref_add(x->layers, hex);
                cJSON_Delete(x->pending_dirs);
                x->pending_dirs = cJSON_CreateArray();
                return 0;
        }
        run_log(x, "info", "%s", what);
        struct step_cmd cmds[4];
        size_t n = 0;
        _cleanup_free_ char *mk = NULL, *mk_try = NULL, *cmd = NULL, *probe = NULL;
        _cleanup_json_ cJSON *env = step_env(x);
        if (cJSON_GetArraySize(x->pending_dirs) > 0) {
                struct buf b = {};
                const cJSON *d;
                buf_adds(&b, "mkdir -p --");
                cJSON_ArrayForEach(d, x->pending_dirs)
                {
                        _cleanup_free_ char *q = shell_quote(d->valuestring);
                        buf_printf(&b, " %s", q ? q : "''");
                }
                mk = buf_steal(&b);
                /* as the build's user where it may (its home: there they are its own), then as
                 * root for the rest (root's capabilities would let it make them anywhere, a
                 * user's home included), then as the build's user again, who must see them all */
                if (!mk || asprintf(&mk_try, "%s 2>/dev/null || true", mk) < 0)
                        return -ENOMEM;
                if (strcmp(x->user, "root") != 0) {
                        cmds[n++] = (struct step_cmd){
                            .cmd = mk_try, .user = x->user, .cwd = "/", .env = env};
                        cmds[n++] = (struct step_cmd){
                            .cmd = mk_try, .user = "root", .cwd = "/", .env = env};
                }
                cmds[n++] = (struct step_cmd){.cmd = mk, .user = x->user, .cwd = "/", .env = env};
        }
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(s, "args");
        const char *type = str(s, "type");
        if (type && strcmp(type, "RUN") == 0) {
                const cJSON *u = cJSON_GetArrayItem(args, 1);
                cmds[n++] = (struct step_cmd){
                    .cmd = cJSON_GetArrayItem(args, 0)->valuestring,
                    .user = cJSON_IsString(u) && *u->valuestring ? u->valuestring : x->user,
                    .cwd = x->workdir,
                    .env = env};
        } else if (type) { /* COPY src dest [user [mode]] */
                const cJSON *u = cJSON_GetArrayItem(args, 2), *m = cJSON_GetArrayItem(args, 3);
                char archive[256];
                snprintf(archive, sizeof(archive), BUILD_RUN_MOUNT "/files/%s",
                         str(s, "filesHash"));
                _cleanup_free_ char *q1 = shell_quote(cJSON_GetArrayItem(args, 0)->valuestring);
                _cleanup_free_ char *q2 = shell_quote(cJSON_GetArrayItem(args, 1)->valuestring);
                _cleanup_free_ char *q3 = shell_quote(cJSON_IsString(m) ? m->valuestring : "");
                if (!q1 || !q2 || !q3 ||
                    asprintf(&cmd, "set -- %s %s %s '%s'\n%s", q1, q2, q3, archive, COPY_SCRIPT) <
                        0)
                        return -ENOMEM;
                const char *user = cJSON_IsString(u) && *u->valuestring ? u->valuestring : x->user;
                if (strcmp(user, "root") == 0 &&
                    asprintf(&probe, "set -- %s\n%s", q2, COPY_OWNER_PROBE) < 0)
                        return -ENOMEM;
                cmds[n++] = (struct step_cmd){
                    .cmd = cmd, .user = user, .cwd = x->workdir, .env = env, .owner_probe = probe};
        }
        int64_t t0 = now_ms();
        int r = build_step_sandbox(x, cmds, n, key, hex, err);
        if (r < 0)
                return r;
        layer_store_ref_add(x->layers, hex);
        cJSON_Delete(x->pending_dirs);
        x->pending_dirs = cJSON_CreateArray();
        x->built++;
        run_log(x, "info", "done in %.1f s", (double)(now_ms() - t0) / 1000.0);
        return 0;
}

static char *join_path(const char *base, const char *p)
{
        char *out = NULL;
        if (p[0] == '/')
                return strdup(p);
        if (asprintf(&out, "%s%s%s", base, base[strlen(base) - 1] == '/' ? "" : "/", p) < 0)
                return NULL;
        return out;
}

/* One step: its config change, or exec_step. */
static int do_step(struct run *x, const cJSON *s, int i, int n, char *err)
{
        const char *type = str(s, "type");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(s, "args"), *a;
        char what[512];
        struct buf b = {};
        buf_printf(&b, "[%d/%d] %s", i, n, type);
        /* RUN cmd [user], COPY src dest [user [mode]]: the optional ones by name */
        bool run = strcmp(type, "RUN") == 0, copy = strcmp(type, "COPY") == 0;
        int pos = 0;
        cJSON_ArrayForEach(a, args)
        {
                int named = run ? 1 : copy ? 2 : INT32_MAX;
                if (pos < named)
                        buf_printf(&b, " %s", a->valuestring);
                else if (*a->valuestring)
                        buf_printf(&b, " (%s %s)", pos == named ? "as" : "mode", a->valuestring);
                pos++;
        }
        snprintf(what, sizeof(what), "%s", buf_str(&b));
        if (strlen(buf_str(&b)) >= sizeof(what))
                memcpy(what + sizeof(what) - 4, "...", 4);
        buf_done(&b);
        snprintf(x->step, sizeof(x->step), "%d", i);
        if (strcmp(type, "ENV") == 0) {
                for (int k = 0; k + 1 < cJSON_GetArraySize(args); k += 2) {
                        const char *name = cJSON_GetArrayItem(args, k)->valuestring;
                        cJSON_DeleteItemFromObjectCaseSensitive(x->env, name);
                        cJSON_AddStringToObject(x->env, name,
                                                cJSON_GetArrayItem(args, k + 1)->valuestring);
                }
        } else if (strcmp(type, "USER") == 0) {
                free(x->user);
                x->user = strdup(cJSON_GetArrayItem(args, 0)->valuestring);
        } else if (strcmp(type, "WORKDIR") == 0) {
                char *wd = join_path(x->workdir, cJSON_GetArrayItem(args, 0)->valuestring);
                if (!wd)
                        return -ENOMEM;
                free(x->workdir);
                x->workdir = wd;
                cJSON_AddItemToArray(x->pending_dirs, cJSON_CreateString(wd));
        } else
                return exec_step(x, s, what, err);
        run_log(x, "info", "%s", what);
        return x->user && x->workdir ? 0 : -ENOMEM;
}

/* The sbx template the build makes. */
static cJSON *final_template(const struct run *x, const cJSON *spec, const char *alias)
{
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", alias);
        cJSON *bl = cJSON_AddObjectToObject(o, "build");
        cJSON_AddStringToObject(bl, "templateID", x->tid);
        cJSON_AddStringToObject(bl, "buildID", x->bid);
        cJSON_AddStringToObject(bl, "base", x->base);
        cJSON_AddItemToObject(o, "layers", cJSON_Duplicate(x->layers, 1));
        cJSON_AddItemToObject(o, "binds", cJSON_Duplicate(x->binds, 1));
        cJSON_AddItemToObject(o, "env", cJSON_Duplicate(x->env, 1));
        cJSON *envd = cJSON_AddObjectToObject(o, "envd");
        cJSON_AddStringToObject(envd, "defaultUser", x->user);
        cJSON_AddStringToObject(envd, "defaultWorkdir", x->workdir);
        cJSON_AddNumberToObject(o, "cpuCount", x->cpu);
        cJSON_AddNumberToObject(o, "memoryMB", x->mem);
        cJSON_AddNumberToObject(o, "diskSizeMB", x->disk);
        static const char *const cmds[] = {"startCmd", "readyCmd"};
        for (size_t i = 0; i < ELEMENTSOF(cmds); i++)
                if (str(spec, cmds[i]) && *str(spec, cmds[i]))
                        cJSON_AddStringToObject(o, cmds[i], str(spec, cmds[i]));
        return o;
}

/* startCmd/readyCmd: a sandbox of the result must start (they run in it) before the build
 * is ready, as E2B's finalize step checks. */
static int finalize(struct run *x, const cJSON *tpl, char *err)
{
        if (!cJSON_GetObjectItemCaseSensitive(tpl, "startCmd") &&
            !cJSON_GetObjectItemCaseSensitive(tpl, "readyCmd"))
                return 0;
        snprintf(x->step, sizeof(x->step), "finalize");
        run_log(x, "info", "Checking the start and ready commands in a sandbox of the template");
        struct template_info t = {.cpu_count = x->cpu, .memory_mb = x->mem, .disk_mb = x->disk};
        char path[4096];
        const cJSON *l;
        t.layers = cJSON_CreateArray();
        cJSON_ArrayForEach(l, x->layers)
        {
                layer_store_path(x->b->state, l->valuestring + strlen(LAYER_PREFIX), path,
                                 sizeof(path));
                cJSON_AddItemToArray(t.layers, cJSON_CreateString(path));
        }
        t.binds = cJSON_Duplicate(x->binds, 1);
        t.env = cJSON_Duplicate(x->env, 1);
        t.default_user = strdup(x->user);
        t.default_workdir = strdup(x->workdir);
        const char *sc = str(tpl, "startCmd"), *rc = str(tpl, "readyCmd");
        t.start_cmd = sc ? strdup(sc) : NULL;
        t.ready_cmd = rc ? strdup(rc) : NULL;
        int r = build_step_finalize(x, &t, err);
        template_done(&t);
        return r;
}

/* Record the result: the tags of the build name it, its templates are written. */
static int publish(struct run *x, cJSON *tpl, char *err)
{
        char ts[32];
        build_now(ts);
        pthread_mutex_lock(&x->b->lock);
        _cleanup_json_ cJSON *t = brec_read(x->b, REC_TEMPLATES, x->tid);
        _cleanup_json_ cJSON *rec = brec_read(x->b, REC_BUILDS, x->bid);
        int r = t && rec ? 0 : ERR(-ENOENT, "the template was deleted during the build");
        cJSON *map = cJSON_GetObjectItemCaseSensitive(t, "tags");
        const cJSON *tag;
        cJSON_ArrayForEach(tag, (r >= 0 ? cJSON_GetObjectItemCaseSensitive(rec, "tags") : NULL))
        {
                cJSON_DeleteItemFromObjectCaseSensitive(map, tag->valuestring);
                cJSON *e = cJSON_AddObjectToObject(map, tag->valuestring);
                cJSON_AddStringToObject(e, "buildID", x->bid);
                cJSON_AddStringToObject(e, "createdAt", ts);
        }
        if (r >= 0) {
                const cJSON *cnt = cJSON_GetObjectItemCaseSensitive(t, "buildCount");
                double n = cJSON_IsNumber(cnt) ? cnt->valuedouble : 0;
                cJSON_DeleteItemFromObjectCaseSensitive(t, "buildCount");
                cJSON_AddNumberToObject(t, "buildCount", n + 1);
                set_str(t, "updatedAt", ts);
                cJSON_AddItemToObject(rec, "template", cJSON_Duplicate(tpl, 1));
                layer_store_read_lock(); /* the template names the layers before gc looks */
                r = brec_publish(x->b, t, x->bid, tpl);
                layer_store_unlock();
        }
        if (r >= 0)
                r = brec_write(x->b, REC_BUILDS, x->bid, rec);
        if (r >= 0)
                r = brec_write(x->b, REC_TEMPLATES, x->tid, t);
        pthread_mutex_unlock(&x->b->lock);
        return r < 0 && !err[0] ? ERR(r, "publishing the template failed: %s", strerror(-r)) : r;
}

static int run_steps(struct run *x, const cJSON *spec, const char *alias, char *err)
{
        const cJSON *steps = cJSON_GetObjectItemCaseSensitive(spec, "steps"), *s;
        int i = 0, n = cJSON_GetArraySize(steps), r;
        snprintf(x->step, sizeof(x->step), "base");
        const char *from =
            str(spec, "fromTemplate") ? str(spec, "fromTemplate") : str(spec, "fromImage");
        run_log(x, "info", "[base] FROM %s", from ? from : "");
        r = prepare_run_dir(x, steps, err);
        if (r >= 0)
                r = build_base_resolve(x, spec, err);
        if (r < 0)
                return r;
        /* minFreeDiskMb: that much room in each sandbox's disk over the base's size */
        x->disk += x->min_free_mb;
        if (x->disk > x->b->srv->config->max_disk_mb)
                return ERR(-EINVAL,
                           "a disk of %u MiB (the base's and minFreeDiskMb) is above this "
                           "server's limit of %llu MiB per sandbox",
                           x->disk, (unsigned long long)x->b->srv->config->max_disk_mb);
        run_log(x, "info", "base: sbx template '%s' (%d layer(s), user %s, workdir %s)", x->base,
                cJSON_GetArraySize(x->layers), x->user, x->workdir);
        cJSON_ArrayForEach(s, steps)
        {
                r = do_step(x, s, ++i, n, err);
                if (r < 0)
                        return r;
        }
        snprintf(x->step, sizeof(x->step), "finalize");
        if (cJSON_GetArraySize(x->pending_dirs) > 0) {
                r = exec_step(x, NULL, "WORKDIR (creating it)", err);
                if (r < 0)
                        return r;
        }
        _cleanup_json_ cJSON *tpl = final_template(x, spec, alias);
        r = finalize(x, tpl, err);
        if (r >= 0)
                r = publish(x, tpl, err);
        return r;
}

void build_run(struct build_service *b, const char *bid)
{
        struct run x = {.b = b};
        char err[BUILD_ERR_MAX] = "", alias[128] = "";
        snprintf(x.bid, sizeof(x.bid), "%s", bid);
        pthread_mutex_lock(&b->lock);
        _cleanup_json_ cJSON *rec = brec_read(b, REC_BUILDS, bid);
        _cleanup_json_ cJSON *spec = cJSON_DetachItemFromObjectCaseSensitive(rec, "spec");
        const char *tid = str(rec, "templateID");
        _cleanup_json_ cJSON *t = tid ? brec_read(b, REC_TEMPLATES, tid) : NULL;
        const cJSON *names = cJSON_GetObjectItemCaseSensitive(t, "names");
        if (cJSON_IsString(cJSON_GetArrayItem(names, 0)))
                snprintf(alias, sizeof(alias), "%s", cJSON_GetArrayItem(names, 0)->valuestring);
        if (tid)
                snprintf(x.tid, sizeof(x.tid), "%s", tid);
        static const char *const sizes[] = {"cpuCount", "memoryMB", "diskSizeMB", "minFreeDiskMb"};
        unsigned *dst[] = {&x.cpu, &x.mem, &x.disk, &x.min_free_mb};
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(rec, sizes[i]);
                *dst[i] = cJSON_IsNumber(v) ? (unsigned)v->valuedouble : 0;
        }
        build_registry_take(b, bid, &x.reg_user, &x.reg_password);
        if (rec && spec) {
                set_str(rec, "status", "building");
                cJSON_AddItemToObject(rec, "spec", cJSON_Duplicate(spec, 1));
                (void)brec_write(b, REC_BUILDS, bid, rec);
        }
        pthread_mutex_unlock(&b->lock);
        if (!rec || !spec || !t) {
                build_finish(b, bid, "error", "the build's records are gone", NULL);
                return;
        }
        x.force = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(spec, "force"));
        x.pending_dirs = cJSON_CreateArray();
        int64_t t0 = now_ms();
        log_info("build %s: started (template %s, %s)", bid, x.tid, alias);
        int r = run_steps(&x, spec, alias, err);
        if (r < 0) {
                if (!err[0])
                        snprintf(err, sizeof(err), "%s", strerror(-r));
                pthread_mutex_lock(&b->lock);
                bool stopping = b->stopping;
                pthread_mutex_unlock(&b->lock);
                if (stopping)
                        snprintf(err, sizeof(err),
                                 "sbxd was stopped during this build; start the build again");
                run_log(&x, "error", "Build failed at step %s: %s", x.step, err);
                build_finish(b, bid, "error", err, x.step[0] ? x.step : NULL);
                log_warning("build %s: failed at %s: %s", bid, x.step, err);
        } else {
                x.step[0] = 0;
                run_log(&x, "info",
                        "Build finished in %.1f s: %u step(s) run, %u from the cache; template %s "
                        "(%s)",
                        (double)(now_ms() - t0) / 1000.0, x.built, x.cached, x.tid, alias);
                build_finish(b, bid, "ready", NULL, NULL);
                log_info("build %s: ready in %lld ms (%u built, %u cached)", bid,
                         (long long)(now_ms() - t0), x.built, x.cached);
        }
        run_done(&x);
}
