/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Admission of image layers (server/storage/README.md, "Admission"): an import or a registry
 * pull writes layers onto the state disk, the disk that also holds every sandbox's disk, so
 * what a layer decompresses to is counted as it is written, before each file's data lands:
 *
 * - one layer may hold at most max_layer_bytes uncompressed (--max-layer-size: default 16 GiB,
 *   at most IMAGE_LAYER_MAX_BYTES): file data by the sizes the tar's headers announce (a
 *   sparse file counts its whole length, in whole 4 KiB blocks), plus
 *   IMAGE_ADMIT_DIR_COST per directory; a compressed blob larger than that is refused before
 *   any of it is read;
 * - before a file (or a downloaded blob) is written, the free space images may use
 *   (image_admit_free_bytes(): the state disk's free space now, less --disk-reserve) must hold
 *   it and what every other writer announced and has not written yet. Each writer (a thread
 *   extracting or downloading) has one announcement at a time: the next replaces it, since
 *   the previous one is on the disk by then and counted in the free space (ext4 counts
 *   delayed allocations there at once).
 *
 * A refusal is -EFBIG (the layer) or -ENOSPC (the disk) with a message naming the layer, the
 * limit and the figures; the caller removes what the layer wrote so far, so a refused image
 * leaves nothing behind.
 */
#pragma once

#include <stdint.h>

#include "core/server-config.h"
#include "storage/image-layer.h"

#define IMAGE_ADMIT_DIR_COST 4096u /* bytes counted for a directory */
#define IMAGE_ADMIT_ERR_MAX  512

struct image_limits {
        uint64_t max_layer_bytes; /* --max-layer-size; 0: IMAGE_LAYER_MAX_BYTES */
        uint64_t reserve_bytes;   /* --disk-reserve: free space never used */
};

/* The limits sbxd's options give (--max-layer-size, --disk-reserve). */
struct image_limits image_limits_of(const struct sbxd_config *cfg);

/* One writer (a thread extracting a layer or downloading a blob). Zero-initialize, set state
 * and lim; image_admit_done() when it stops writing, whatever happened. */
struct image_admission {
        const char *state;
        struct image_limits lim;
        uint64_t announced; /* not written yet, counted in every other writer's check */
};

/* The free space image layers may use on the state disk at state: its free space less
 * reserve_bytes (0 when less is free). The one place that says what "free" is. */
int image_admit_free_bytes(const char *state, uint64_t reserve_bytes, uint64_t *ret);

/* The per-layer bound of a (IMAGE_LAYER_MAX_BYTES for a NULL a). */
uint64_t image_admit_max_layer(const struct image_admission *a);

/*
 * Announce bytes more for the layer what (a name for messages: "layer sha256:ab12…") whose
 * total so far is *layer_bytes (updated on success; NULL: no layer's own data, only the disk
 * check, e.g. a compressed blob). -EFBIG past the layer's bound, -ENOSPC past the free space,
 * with the message in err. A NULL a counts nothing and admits everything.
 */
int image_admit_charge(struct image_admission *a, uint64_t *layer_bytes, uint64_t bytes,
                       const char *what, char err[static IMAGE_ADMIT_ERR_MAX]);
/* The writer stopped: its announcement no longer counts. */
void image_admit_done(struct image_admission *a);
