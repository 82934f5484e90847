/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where a build starts (server/build/README.md "Bases"): fromTemplate names any sbx template;
 * fromImage maps E2B's own base images and Debian to the local Debian base and anything else
 * to an image imported with `sbx image import` (sbxd contacts no registry).
 */
#include "build/build-run.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "storage/image-import.h"
#include "storage/layer-store.h"

/* The sbx template fromImage stands for, or an error saying how to import it. */
static int image_template(const char *state, const char *image, char *out, size_t size, char *err)
{
        char name[256], tag[64] = "";
        const char *s = image;
        static const char *const prefixes[] = {"docker.io/", "index.docker.io/", "library/"};
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (strncmp(s, prefixes[i], strlen(prefixes[i])) == 0)
                        s += strlen(prefixes[i]);
        snprintf(name, sizeof(name), "%s", s);
        char *slash = strrchr(name, '/'), *colon = strrchr(name, ':');
        if (colon && (!slash || colon > slash)) {
                *colon = 0;
                snprintf(tag, sizeof(tag), "%s", colon + 1);
        }
        /* E2B's base images and Debian: the local Debian base (templates/README.md) */
        if (strcmp(name, "e2bdev/base") == 0 || strcmp(name, "debian") == 0) {
                snprintf(out, size, "base");
                return 0;
        }
        if (strncmp(name, "e2bdev/code-interpreter", 23) == 0) {
                snprintf(out, size, "code-interpreter-v1");
                return 0;
        }
        for (char *p = name; *p; p++)
                *p = *p == '/' ? '-' : (char)tolower((unsigned char)*p);
        char id[IMAGE_ID_MAX];
        _cleanup_json_ cJSON *img = NULL;
        if (image_template_id(name, tag[0] ? tag : NULL, id) >= 0 &&
            image_get(state, id, &img) >= 0) {
                snprintf(out, size, "%s", id);
                return 0;
        }
        return ERR(-ENOENT,
                   "image '%s' is not imported: sbx pulls from no registry. Import it first: on a "
                   "machine with docker, `docker pull %s && docker save %s -o image.tar`, then "
                   "`sbx image import %s%s%s image.tar` (the name may not contain '/': use '-')",
                   image, image, image, name, tag[0] ? ":" : "", tag);
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
                r = image_template(state, img, name, sizeof(name), err);
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
