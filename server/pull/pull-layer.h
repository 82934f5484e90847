/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One layer blob of a pull into the layer store (server/pull/README.md, "Layers"):
 *
 * - a blob whose digest the store knows already (layers/.digests, imports and earlier pulls)
 *   is not transferred at all;
 * - one transfer per digest at a time in the whole sbxd: a pull that wants a blob another is
 *   fetching waits for it and then finds it in the store (or fetches it itself when the other
 *   failed);
 * - the blob is downloaded into an unnamed file (O_TMPFILE) on the state disk, at most the
 *   size its descriptor gives (itself at most --max-layer-size), hashed as it arrives; only a
 *   blob whose SHA-256 is its digest is read further: extracted by image-layer (gzip, zstd or
 *   plain tar, libarchive's own decompressors) into layers/.tmp-*, admitted as it is written
 *   (storage/image-admit.h), adopted into the store and pinned until the pull's template
 *   names it (layer-store.h). A transfer that fails for the network is tried again, at most
 *   PULL_BLOB_TRIES times.
 */
#pragma once

#include <stdint.h>

#include "pull/pull-http.h"
#include "storage/image-import.h"

#define PULL_BLOB_TRIES 3

struct pull_layer_job {
        const char *state;
        struct pull_remote *rm;
        char digest[65]; /* hex */
        uint64_t size;   /* from the manifest's descriptor: > 0 */
        struct image_limits lim;
        int *stop; /* set: give up (another layer failed, the pull was cancelled) */
        /* bytes of this blob received so far (may be NULL) */
        void (*progress)(struct pull_layer_job *j, uint64_t bytes);
        void *ud;
        /* results */
        struct image_layer_out out; /* out.hex is pinned on success */
        bool transferred;           /* false: found in the store (or fetched by another pull) */
        char err[PULL_ERR_MAX];
};

/* Fetch j's blob into the store (above), with the calling thread's libcurl handle *h. 0, or
 * -errno with j->err: -EBADMSG (the blob is not its digest), -EFBIG, -ENOSPC, -EINVAL (not a
 * layer sbxd can use), pull_http_get's errors. */
int pull_layer_fetch(struct pull_layer_job *j, void **h);

/* Wake the pulls waiting for another's transfer, so that one whose stop was set gives up. */
void pull_layer_wake(void);
