/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Images from registries (server/pull/README.md): sbxd pulls over the OCI distribution API,
 * on the host (never from a sandbox), into the layer store and a template made by the same
 * path as an imported archive (storage/image-import.h, image_template_publish).
 *
 * A pull: the reference (pull-ref.h); the endpoints (for docker.io the --registry-mirror
 * URLs in order, then Docker Hub); the manifest (an OCI or Docker v2 schema 2 image
 * manifest, or an index / manifest list from which the linux/amd64 image is taken), checked
 * against the digest asked for and the registry's Docker-Content-Digest; the config blob,
 * checked; the layers, PULL_PARALLEL_LAYERS at a time (pull-layer.h: verified before they
 * are extracted, shared by digest, admitted); then the template.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdint.h>

#include "core/server-config.h"
#include "pull/pull-ref.h"
#include "storage/image-import.h"

#define PULL_PARALLEL_LAYERS 3
#define PULL_PROGRESS_MS     1000 /* a layer's progress is reported at most this often */

/* What a pull tells as it goes (for a log or a progress stream). */
struct pull_event {
        const char *kind;    /* "resolving", "resolved", "layer", "layer-done", "template" */
        const char *message; /* a line for a log */
        const char *digest;  /* "sha256:<hex>" of the layer, or NULL */
        uint64_t bytes;      /* the layer's bytes received so far */
        uint64_t total;      /* the layer's size (compressed) */
        unsigned index;      /* the layer's place, 1-based, bottom first */
        unsigned count;      /* the image's layers */
        bool reused;         /* layer-done: found in the store, not transferred */
};

struct pull_request {
        const char *image;               /* the reference as the user wrote it */
        const char *name, *tag;          /* the template's name and tag; NULL: derived */
        const char *username, *password; /* both or neither; NULL: Docker's config.json */
        struct image_limits lim;
        /* called for each event, one at a time (may be NULL) */
        void (*event)(void *ud, const struct pull_event *ev);
        void *ud;
        const int *cancel; /* non-zero: stop as soon as possible (may be NULL) */
};

/* How sbxd reaches registries, from its options (copied); once at start, before any thread
 * and any pull. -EINVAL with the reason in err (an http:// mirror that is neither loopback nor
 * --insecure-registry, an unreadable --registry-ca). What it keeps stays until sbxd exits: a
 * detached pull may still run then. */
int pull_setup(const struct sbxd_config *cfg, char err[static PULL_ERR_MAX]);

/*
 * Pull rq->image into the store and its template. On success *ret is the image's JSON (as
 * GET /v1/images/{id} shows it, with "source" and "warnings"). -EINVAL (a bad reference, an
 * image sbxd cannot use), -ENOENT (the registry has no such image), -EACCES (refused:
 * credentials), -EEXIST (a template that is not an image has its name), -EBADMSG (a blob
 * that is not its digest), -EFBIG, -ENOSPC, -EHOSTUNREACH, -EBUSY, -EPROTO, -ECANCELED;
 * err says what. Nothing of a failed pull stays in use: its layers are unreferenced (gc
 * collects them) and no template names them.
 */
int pull_image(const char *state, const struct pull_request *rq, cJSON **ret,
               char err[static PULL_ERR_MAX]);

/* The template id the image reference image becomes when pulled (pull_ref_image_name):
 * -EINVAL with err for a bad reference. */
int pull_template_id(const char *image, char ret_id[static IMAGE_ID_MAX],
                     char err[static PULL_ERR_MAX]);
