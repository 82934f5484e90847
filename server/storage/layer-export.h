/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A store layer as a tar stream and back (cluster mode moves layers between nodes with it,
 * server/cluster/README.md "Templates on many nodes").
 *
 * layer_export writes layers/<hex> as a pax tar in the store's walk order: the root as ".",
 * then every entry (directories before what they hold), with mode, owner, mtime, user.*
 * xattrs; sparse files as pax sparse entries (holes are not sent); a further name of a
 * multiply-linked file as a hard link to the first; an overlay whiteout (0/0 char device) as
 * the OCI ".wh.NAME" entry and an opaque dir as ".wh..wh..opq" in it, which is what the image
 * importer (image-layer.h) reads back. layer_import_stream reads such a tar with that importer
 * into a temp dir of the store and keeps it only when the store's canonical walk of what was
 * written names exactly the layer asked for: the content hash is the check, whoever sent it.
 */
#pragma once

#include "storage/image-layer.h"

/* Write layer hex to fd. Call with the store's read lock held. -ENOENT when the store has no
 * such layer; -EPIPE when the reader went away. */
int layer_export(const char *state, const char *hex, int fd);

/* Read a layer tar from fd into the store as layers/<want_hex>. 0 when stored (or already
 * there: the stream is then not read); -EBADMSG when what arrived hashes to another layer (err
 * says both), -EINVAL with err for a tar the importer refuses, -errno of the file system.
 * Call with the store's read lock held. */
int layer_import_stream(const char *state, int fd, const char *want_hex,
                        char err[static IMAGE_LAYER_ERR_MAX]);
