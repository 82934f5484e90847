/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Images into templates (server/storage/README.md, "Images"): an OCI image layout or a
 * `docker save` archive, read with libarchive, becomes layers of the store (one per image
 * layer, deduplicated by digest) and a template <state>/templates/<id>/template.json naming
 * them, with the image config's Env, WorkingDir, User, Entrypoint and Cmd. The template id is
 * NAME, or NAME:TAG for a tag other than "latest". Images are the templates whose
 * template.json has an "image" object; removing one removes its template, and the store's gc
 * its layers once nothing uses them.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/validate.h"
#include "storage/image-admit.h"
#include "storage/image-layer.h"
#include "storage/image-manifest.h"
#include "storage/layer-store.h"

struct archive;

#define IMAGE_NAME_MAX    48                  /* [a-z0-9][a-z0-9._-]* */
#define IMAGE_TAG_MAX     40                  /* [A-Za-z0-9_][A-Za-z0-9._-]* */
#define IMAGE_MAX_MEMBERS 100000u             /* members of the archive */
#define IMAGE_MAX_META    (64u * 1024 * 1024) /* bytes of small members kept in memory */
#define IMAGE_MAX_ARCHIVE (32ull << 30)       /* bytes of an uploaded archive */
/* NAME[:TAG], at most a template name's length */
#define IMAGE_ID_MAX (TEMPLATE_NAME_MAX + 1)
/* A template made from an image runs as E2B's do (templates/README.md, "Images"). */
#define IMAGE_DEFAULT_USER    "user"
#define IMAGE_DEFAULT_WORKDIR "/home/user"

/* NAME and TAG (NULL or "latest": none) → the template id; -EINVAL when either is malformed
 * or NAME:TAG is longer than TEMPLATE_NAME_MAX. */
int image_template_id(const char *name, const char *tag, char ret[static IMAGE_ID_MAX]);

/* What one image layer became in the store. */
struct image_layer_out {
        char hex[LAYER_ID_MAX]; /* the store layer, once known */
        bool reused;            /* found by its digest, nothing read */
        struct image_layer_stats st;
};

/*
 * Import the archive open at fd (read from its start, three times: the manifests, the layers'
 * digests, the layers) as image name:tag (tag NULL: "latest"); ref picks one image of an
 * archive holding several (NULL: the only one). Layers are admitted under lim
 * (storage/image-admit.h). On success *ret is the image's JSON (as image_list shows it, plus
 * "warnings"). -EINVAL (bad archive, with the reason in err), -EEXIST (a template of that id
 * exists and is not an image), -EFBIG (a layer past --max-layer-size), -ENOSPC (with a
 * message when admission refused), -ENOMEM or another -errno.
 */
int image_import(const char *state, int fd, const char *name, const char *tag, const char *ref,
                 const struct image_limits *lim, cJSON **ret, char err[static IMAGE_ERR_MAX]);

/* Whether name:tag may become an image's template: its id in ret_id; -EINVAL (malformed) or
 * -EEXIST (a template that is not an image has that id), with the message in err. */
int image_template_check(const char *state, const char *name, const char *tag,
                         char ret_id[static IMAGE_ID_MAX], char err[static IMAGE_ERR_MAX]);

/*
 * The template of an image whose layers are in the store (outs, one per p->layers): written
 * as <state>/templates/<id>/template.json (replacing an older image of that id in one step),
 * with the config's fields; extra's members (may be NULL) are added to its "image" object
 * (a pull's "source"). Every path that makes an image a template goes through here. Call with
 * the store's read lock held (the layers must not be collected before the template names
 * them). *ret as image_import's.
 */
int image_template_publish(const char *state, const char *name, const char *tag,
                           const struct image_plan *p, const struct image_layer_out *outs,
                           const cJSON *extra, cJSON **ret, char err[static IMAGE_ERR_MAX]);

/* A libarchive reader for one layer blob (tar, plain or gzip/zstd/xz/bzip2 compressed, by
 * libarchive's built-in decompressors only), not opened yet. */
int image_layer_open(struct archive **ret);
/* The layer read from inner (opened) extracted into a temp dir of the store under adm,
 * adopted into the store and recorded under its blob digest (hex). Call with the store's read
 * lock held (or a pin: layer-store.h). -EINVAL, -EFBIG, -ENOSPC with a message in err, or
 * another -errno; nothing is left of a failed layer. */
int image_layer_store(const char *state, struct archive *inner, const char *digest,
                      struct image_admission *adm, struct image_layer_out *out,
                      char err[static IMAGE_ERR_MAX]);

/* Every imported image, {"name","tag","template","digest",...}, newest first. */
int image_list(const char *state, cJSON **ret);
/* One image by template id: -ENOENT when there is none (or the template is not an image). */
int image_get(const char *state, const char *id, cJSON **ret);
/* Remove the image's template, then collect its layers (running sandboxes keep theirs).
 * -ENOENT, -EPERM when the template is not an image. */
int image_remove(const char *state, const char *id);
