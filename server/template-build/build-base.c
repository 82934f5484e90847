/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a build starts (server/template-build/README.md "Bases"): fromTemplate names any sbx
 * template; fromImage maps E2B's own base images and Debian to the local Debian base and anything
 * else to an image's template, pulled from its registry (pull/pull.h) with fromImageRegistry's
 * credentials when there are any.
 */
#include "template-build/build-run.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "pull/pull-auth.h"
#include "pull/pull.h"
#include "storage/image-import.h"
#include "storage/layer-store.h"
#include "time-util.h"

/* ---- fromImageRegistry: credentials of queued builds, in memory only ---- */

struct build_creds {
        char bid[BUILD_ID_MAX];
        char *user, *password;
        struct build_creds *next;
};

static void creds_free(struct build_creds *c)
{
        if (!c)
                return;
        if (c->password)
                explicit_bzero(c->password, strlen(c->password));
        free(c->user);
        free(c->password);
        free(c);
}

int build_registry_check(const cJSON *reg, char *err)
{
        const char *type = str(reg, "type");
        if (!cJSON_IsObject(reg) || !type)
                return ERR(-EINVAL, "fromImageRegistry must be an object with a type");
        if (strcmp(type, "registry") == 0) {
                const char *u = str(reg, "username"), *p = str(reg, "password");
                if (!u || !p || !*u || !*p || strlen(u) > PULL_CRED_MAX ||
                    strlen(p) > PULL_CRED_MAX)
                        return ERR(-EINVAL,
                                   "fromImageRegistry: username and password are non-empty "
                                   "strings of at most %d bytes",
                                   PULL_CRED_MAX);
                return 0;
        }
        if (strcmp(type, "gcp") == 0) {
                const char *j = str(reg, "serviceAccountJson");
                if (!j || !*j || strlen(j) > PULL_CRED_MAX)
                        return ERR(-EINVAL,
                                   "fromGCPRegistry: serviceAccountJson is a JSON key "
                                   "of at most %d bytes",
                                   PULL_CRED_MAX);
                return 0;
        }
        if (strcmp(type, "aws") == 0)
                return ERR(-EINVAL,
                           "fromAWSRegistry is not supported: sbx calls no AWS API to turn access "
                           "keys into a registry password. Give the password itself: "
                           "fromImage(image, {username: 'AWS', password: <the output of `aws ecr "
                           "get-login-password --region REGION`>})");
        return ERR(-EINVAL, "fromImageRegistry of type '%.40s' is not supported", type);
}

cJSON *build_registry_redacted(const cJSON *reg)
{
        /* what the build record keeps: the kind and the user, never a secret */
        cJSON *o = cJSON_CreateObject();
        const char *type = str(reg, "type");
        cJSON_AddStringToObject(o, "type", type ? type : "");
        if (type && strcmp(type, "registry") == 0 && str(reg, "username"))
                cJSON_AddStringToObject(o, "username", str(reg, "username"));
        return o;
}

int build_registry_keep(struct build_service *b, const char *bid, const cJSON *reg)
{
        struct build_creds *c = calloc(1, sizeof(*c));
        const char *type = str(reg, "type");
        bool gcp = type && strcmp(type, "gcp") == 0;
        if (!c)
                return -ENOMEM;
        snprintf(c->bid, sizeof(c->bid), "%s", bid);
        /* Google's registries take a service account's JSON key as Basic auth's password of
         * the user _json_key */
        c->user = strdup(gcp ? "_json_key" : str(reg, "username"));
        c->password = strdup(gcp ? str(reg, "serviceAccountJson") : str(reg, "password"));
        if (!c->user || !c->password) {
                creds_free(c);
                return -ENOMEM;
        }
        /* at most as many as builds can be queued or running: the oldest goes */
        size_t n = 0;
        struct build_creds **p = &b->creds;
        for (; *p; p = &(*p)->next)
                if (++n >= BUILD_MAX_QUEUED + BUILD_WORKERS) {
                        creds_free(*p);
                        *p = NULL;
                        break;
                }
        c->next = b->creds;
        b->creds = c;
        return 0;
}

void build_registry_take(struct build_service *b, const char *bid, char **ret_user,
                         char **ret_password)
{
        for (struct build_creds **p = &b->creds; *p; p = &(*p)->next)
                if (strcmp((*p)->bid, bid) == 0) {
                        struct build_creds *c = *p;
                        *p = c->next;
                        *ret_user = TAKE_PTR(c->user);
                        *ret_password = TAKE_PTR(c->password);
                        creds_free(c);
                        return;
                }
}

/* ---- fromImage ---- */

struct pull_log {
        struct run *x;
        int64_t last; /* ms of the last progress line */
};

static void on_pull_event(void *ud, const struct pull_event *ev)
{
        struct pull_log *l = ud;
        if (strcmp(ev->kind, "layer") == 0) {
                int64_t now = now_ms();
                if (now - l->last < BUILD_PULL_PROGRESS_MS)
                        return;
                l->last = now;
        }
        run_log(l->x, "info", "%s", ev->message);
}

/* The sbx template fromImage stands for: E2B's base images and Debian are the local Debian
 * base, anything else an image's template, pulled unless it is here already (a skipCache
 * build pulls it again). */
static int image_template(struct run *x, const char *image, char *out, size_t size, char *err)
{
        struct pull_ref ref;
        char perr[PULL_ERR_MAX], id[IMAGE_ID_MAX];
        if (pull_ref_parse(image, &ref, perr) < 0 || pull_template_id(image, id, perr) < 0)
                return ERR(-EINVAL, "fromImage: %s", perr);
        bool hub = strcmp(ref.host, PULL_DOCKER_HUB) == 0;
        if (hub &&
            (strcmp(ref.repo, "e2bdev/base") == 0 || strcmp(ref.repo, "library/debian") == 0)) {
                snprintf(out, size, "base");
                return 0;
        }
        if (hub && strncmp(ref.repo, "e2bdev/code-interpreter", 23) == 0) {
                snprintf(out, size, "code-interpreter-v1");
                return 0;
        }
        _cleanup_json_ cJSON *img = NULL;
        bool here = image_get(x->b->state, id, &img) >= 0;
        snprintf(out, size, "%s", id);
        if (here && !x->force) {
                run_log(x, "info",
                        "image %s is template '%s' already (pulled or imported before; a build "
                        "with skipCache pulls it again)",
                        image, id);
                return 0;
        }
        struct pull_log log = {.x = x};
        struct pull_request rq = {.image = image,
                                  .username = x->reg_user,
                                  .password = x->reg_password,
                                  .lim = image_limits_of(x->b->srv->config),
                                  .event = on_pull_event,
                                  .ud = &log,
                                  .cancel = &x->b->stop_flag};
        _cleanup_json_ cJSON *pulled = NULL;
        int r = pull_image(x->b->state, &rq, &pulled, perr);
        if (r >= 0)
                return 0;
        if (here && r == -EHOSTUNREACH) {
                run_log(x, "warn", "%s; building on the copy of %s pulled before", perr, image);
                return 0;
        }
        return ERR(r == -ENOENT ? -ENOENT : -EINVAL, "pulling '%s' failed: %s%s", image, perr,
                   hub && r == -EHOSTUNREACH
                       ? " (an offline site gives sbxd --registry-mirror URL for docker.io "
                         "images, or imports the image with `sbx image import`)"
                       : "");
}

int build_base_resolve(struct run *x, const cJSON *spec, char *err)
{
        const char *state = x->b->state, *img = str(spec, "fromImage");
        const char *from = str(spec, "fromTemplate");
        char name[256];
        int r = 0;
        if (from && *from)
                snprintf(name, sizeof(name), "%s", from);
        else
                r = image_template(x, img, name, sizeof(name), err);
        if (r < 0)
                return r;
        if (!template_name_valid(name))
                return ERR(-EINVAL, "invalid template name '%s'", name);
        struct template_info t = {};
        r = template_load(state, name, &t);
        if (r < 0)
                return ERR(r == -ENOENT ? -ENOENT : -EIO, "template '%s' %s", name,
                           r == -ENOENT ? "not found" : "is unusable");
        if ((size_t)snprintf(x->base, sizeof(x->base), "%s", name) >= sizeof(x->base))
                r = -ENAMETOOLONG;
        /* the base's layers as store refs: a template's own layer dirs are imported (hard
         * links), so the built template does not depend on them staying */
        layer_store_read_lock();
        if (r >= 0)
                r = template_store_refs(state, &t, &x->layers);
        /* the imported layers are referenced before the lock goes: a gc in between would
         * otherwise take them; the entry also keeps them (and their import) across restarts */
        if (r >= 0) {
                char key[TEMPLATE_NAME_MAX + 8];
                snprintf(key, sizeof(key), "base-%s", x->base);
                build_cache_put(x, key, x->layers);
        }
        layer_store_unlock();
        x->binds = cJSON_Duplicate(t.binds, 1);
        x->env = t.env ? cJSON_Duplicate(t.env, 1) : cJSON_CreateObject();
        x->user = strdup(t.default_user);
        x->workdir = strdup(t.default_workdir);
        x->cpu = x->cpu ? x->cpu : t.cpu_count;
        x->mem = x->mem ? x->mem : t.memory_mb;
        x->disk = x->disk ? x->disk : t.disk_mb;
        template_done(&t);
        if (r < 0)
                return ERR(r, "importing the layers of template '%s' failed: %s", name,
                           strerror(-r));
        return x->user && x->workdir && x->env && x->binds ? 0 : -ENOMEM;
}
