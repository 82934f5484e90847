/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One image layer (a tar stream, read with libarchive) written into an empty directory as an
 * overlay lower layer (server/storage/README.md, "Images"):
 *
 * - regular files (sparse data stays sparse), directories, symlinks (any target: it resolves
 *   inside the sandbox's root), hard links (to a file earlier in the same layer), FIFOs, with
 *   their mode (set-id bits kept: the store is nosuid on the host, no_new_privs inside),
 *   owner (ids past 65535, outside a sandbox's id range, become 65534), mtime and xattrs
 *   (user.* and security.capability; others are dropped and counted);
 * - OCI whiteouts: ".wh.NAME" becomes overlayfs's whiteout (a 0/0 character device) at NAME,
 *   ".wh..wh..opq" marks its directory opaque (trusted.overlay.opaque=y); other ".wh..wh."
 *   names (aufs bookkeeping) are ignored;
 * - device nodes and sockets are skipped, counted, and the first one named;
 * - refused, with a message naming the entry (-EINVAL): absolute paths, ".." components, a
 *   path or a hard link target that goes through a symlink or a non-directory of the layer, a
 *   hard link to a file not (yet) in the layer or to a directory, and more than the limits
 *   below. Every path is resolved from the layer's root fd with openat2(RESOLVE_BENEATH |
 *   RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV), so nothing is ever
 *   written outside it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/server-config.h"

struct archive;
struct image_admission;

#define IMAGE_LAYER_MAX_ENTRIES 1000000u /* entries in one layer */
/* file bytes in one layer, uncompressed: the most --max-layer-size may say (64 GiB) */
#define IMAGE_LAYER_MAX_BYTES SBXD_MAX_LAYER_LIMIT
#define IMAGE_LAYER_MAX_DEPTH 128u          /* path components */
#define IMAGE_LAYER_MAX_XATTR (64u * 1024u) /* bytes of one xattr value */
#define IMAGE_LAYER_ERR_MAX   512

struct image_layer_stats {
        uint64_t entries, bytes;
        uint64_t whiteouts, opaque, hardlinks, symlinks;
        uint64_t skipped_devices, dropped_xattrs;
        char first_device[256]; /* the first skipped device node's path */
};

/* Extract the layer archive a (opened by the caller, positioned before its first header) into
 * the empty directory root_fd, each file and directory admitted by adm (storage/image-admit.h;
 * NULL: only the limits above) before it is written, what naming the layer in its messages.
 * 0, or -EINVAL with a message in err (bad or hostile input), -EFBIG (past --max-layer-size)
 * or -ENOSPC (past the free space) with a message in err, -EDQUOT, or another -errno of the
 * file system. Adds to *stats. */
int image_layer_extract(struct archive *a, int root_fd, struct image_admission *adm,
                        const char *what, struct image_layer_stats *stats,
                        char err[static IMAGE_LAYER_ERR_MAX]);
