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
#include <stdint.h>

#include "storage/image-manifest.h"

#define IMAGE_NAME_MAX    48                  /* [a-z0-9][a-z0-9._-]* */
#define IMAGE_TAG_MAX     14                  /* [A-Za-z0-9_][A-Za-z0-9._-]* */
#define IMAGE_MAX_MEMBERS 100000u             /* members of the archive */
#define IMAGE_MAX_META    (64u * 1024 * 1024) /* bytes of small members kept in memory */
#define IMAGE_MAX_ARCHIVE (32ull << 30)       /* bytes of an uploaded archive */
#define IMAGE_ID_MAX      (IMAGE_NAME_MAX + 1 + IMAGE_TAG_MAX + 1)
/* A template made from an image runs as E2B's do (templates/README.md, "Images"). */
#define IMAGE_DEFAULT_USER    "user"
#define IMAGE_DEFAULT_WORKDIR "/home/user"

/* NAME and TAG (NULL or "latest": none) → the template id; -EINVAL when either is malformed. */
int image_template_id(const char *name, const char *tag, char ret[static IMAGE_ID_MAX]);

/*
 * Import the archive open at fd (read from its start, twice) as image name:tag (tag NULL:
 * "latest"); ref picks one image of an archive holding several (NULL: the only one). On
 * success *ret is the image's JSON (as image_list shows it, plus "warnings"). -EINVAL (bad
 * archive, with the reason in err), -EEXIST (a template of that id exists and is not an
 * image), -ENOSPC, -ENOMEM or another -errno.
 */
int image_import(const char *state, int fd, const char *name, const char *tag, const char *ref,
                 cJSON **ret, char err[static IMAGE_ERR_MAX]);

/* Every imported image, {"name","tag","template","digest",...}, newest first. */
int image_list(const char *state, cJSON **ret);
/* One image by template id: -ENOENT when there is none (or the template is not an image). */
int image_get(const char *state, const char *id, cJSON **ret);
/* Remove the image's template, then collect its layers (running sandboxes keep theirs).
 * -ENOENT, -EPERM when the template is not an image. */
int image_remove(const char *state, const char *id);
