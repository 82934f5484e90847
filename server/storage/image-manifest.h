/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What an image archive holds, from its small members (pure, no I/O): an OCI image layout
 * (index.json, blobs/sha256/...) or a `docker save` archive (manifest.json, old and new
 * layouts), resolved to one image: the config's fields and the layer members, bottom first,
 * each with the sha256 its bytes must have.
 *
 * - OCI: index.json's manifests (nested indexes followed, at most IMAGE_MAX_INDEX_DEPTH),
 *   image manifests for another platform than the host's dropped (attestations have
 *   "unknown"); the manifest and config blobs must match their digests. Layer media types:
 *   tar, tar+gzip, tar+zstd (OCI and Docker names); foreign/non-distributable layers are
 *   refused.
 * - docker save: manifest.json's entry; each layer's digest is its blobs/sha256/<hex> name or
 *   else the config's rootfs.diff_ids (an old-layout layer.tar is the uncompressed tar).
 * - Several images in one archive: ref picks one (an OCI ref.name annotation, a containerd
 *   image name, or a RepoTag); without ref, one image or a refusal naming them.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#define IMAGE_MAX_JSON        (1024 * 1024) /* bytes of a manifest, index or config */
#define IMAGE_MAX_LAYERS      63            /* a template has at most 64 layers */
#define IMAGE_MAX_INDEX_DEPTH 4
#define IMAGE_ERR_MAX         512

/* A member of the archive kept in memory (at most IMAGE_MAX_JSON bytes). */
struct image_member {
        char *path; /* normalized: no "./" */
        char *data;
        size_t len;
};

struct image_members {
        struct image_member *v;
        size_t n, cap;
        size_t total; /* bytes kept */
};

struct image_layer_ref {
        char *path;      /* the member holding the layer's tar */
        char digest[65]; /* the sha256 (hex) of its bytes */
};

struct image_plan {
        bool oci;        /* else docker save */
        char digest[72]; /* "sha256:<hex>": the image's manifest (OCI) or config digest */
        size_t n_layers;
        struct image_layer_ref layers[IMAGE_MAX_LAYERS];
        cJSON *env;        /* array of "K=V" strings, or NULL */
        char *user;        /* may be NULL */
        char *workdir;     /* may be NULL */
        cJSON *entrypoint; /* arrays of strings, or NULL */
        cJSON *cmd;
};

/* Add a member (data copied; len <= IMAGE_MAX_JSON). */
int image_members_add(struct image_members *m, const char *path, const void *data, size_t len);
const struct image_member *image_members_find(const struct image_members *m, const char *path);
void image_members_done(struct image_members *m);

/* Resolve the archive's image. -EINVAL with a message in err for anything malformed,
 * ambiguous or unsupported; -ENOMEM. */
int image_plan_resolve(const struct image_members *m, const char *ref, const char *arch,
                       struct image_plan *ret, char err[static IMAGE_ERR_MAX]);
void image_plan_done(struct image_plan *p);
