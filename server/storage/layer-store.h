/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The layer store: <state>/layers/<sha256>/, immutable directory trees used as read-only
 * overlay lower layers. A layer's name is the SHA-256 of a canonical walk of its tree (names
 * in byte order; type, mode, owner, size, content, link target, device whiteouts, opaque
 * dirs), so the same files give the same layer and a layer is stored once. File content is
 * read, hashed and copied in 64 KiB pieces, runs of zero pieces as one mark: holes are never
 * read and stay holes in the copy, so a copy costs what the file really holds (a sandbox's
 * `truncate -s 5G` on a 1 GiB disk is a few KiB and milliseconds, not 5 GiB), and the hash
 * does not depend on where the source had its holes.
 *
 * - ingest_upper: a sandbox's writable upper (the host-visible tmpfs or image at
 *   <dir>/rootfs/upper, or its storage pool subvolume's upper/,
 *   read with openat(O_NOFOLLOW) from a dirfd: never following a sandbox-made symlink, never
 *   entering another file system), owners shifted from the sandbox's host uid range back to
 *   sandbox ids (the jailer idmaps lower layers), overlay whiteouts (0/0 char devices) and
 *   opaque dirs (trusted.overlay.opaque) kept, so the layer stacks over the sandbox's own
 *   lower layers exactly as the upper did. Sockets, device nodes other than whiteouts,
 *   hard-link identity and xattrs other than the opaque mark are not kept.
 * - import_dir: a template's own layer dir (hard links, not copies: template layers are never
 *   modified in place, templates/README.md), so a snapshot does not depend on the template
 *   dir staying as it is. Cached per (path, template stamp) in layers/.imports/.
 * - adopt: a tree an image import extracted in place under layers/.tmp-* (image-layer.h),
 *   named by the same walk without a copy. Image layer blobs are deduplicated by digest too
 *   (layers/.digests/<blob sha256> → layer), so importing a layer again reads nothing of it.
 * - References: template.json files name layers as "sha256:<hex>"; sandbox records list the
 *   absolute paths they run on. layer_store_gc() removes every layer neither mentions
 *   (reference counts are computed, so a crash can never leave a count wrong). The store lock
 *   (a rwlock) is held shared by anything that writes a reference, exclusive by gc.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>
#include <sys/types.h>

#define LAYER_ID_MAX 65 /* 64 hex + NUL */
/* Pins (layer_store_pin): how long, and how many at once (the oldest makes room). */
#define LAYER_HOLD_S   600
#define LAYER_HOLD_MAX 64
#define LAYER_PREFIX   "sha256:"

void layer_store_read_lock(void);
void layer_store_unlock(void);

/* <state>/layers/<hex>. */
void layer_store_path(const char *state, const char *hex, char *buf, size_t size);
/* Whether path is <state>/layers/<64 hex>; copies the hex to ret_hex (may be NULL). */
int layer_store_is_layer(const char *state, const char *path, char *ret_hex);

/* A sandbox's upper dir (<dir>/rootfs/upper, or <pool>/sandboxes/<id>/upper), whose ids
 * uid_base .. uid_base + uid_count - 1 on the host are ids 0.. inside (a pool upper: uid_base
 * 0, its files hold the sandbox's own ids). -ENODEV when its file system is not there. Call with
 * the read lock held. ret_hex: LAYER_ID_MAX bytes. */
int layer_store_ingest_upper(const char *state, const char *upper, uid_t uid_base, uid_t uid_count,
                             char *ret_hex);
int layer_store_import_dir(const char *state, const char *dir, char *ret_hex);
/* layers (a JSON array of absolute paths, bottom first: store layers, or a template's own layer
 * dirs, which are put in the store as import_dir does) appended to refs as "sha256:<hex>"
 * refs. -EINVAL for an entry that is not a string, or layer_store_import_dir()'s error. Call
 * with the read lock held. */
int layer_store_refs(const char *state, const cJSON *layers, cJSON *refs);
/* "sha256:<hex>" appended to refs. */
void layer_store_ref_add(cJSON *refs, const char *hex);

/* A fresh, empty <state>/layers/.tmp-<random> (0700) to build a layer in place (image
 * import); its path in ret_path. gc at start-up removes those left by a crash. */
int layer_store_tmp_dir(const char *state, char *ret_path, size_t size);
/* Name the tree built at tmp (from layer_store_tmp_dir) by the same canonical walk as every
 * layer (hash only, nothing copied) and rename it to layers/<hex>; when that layer exists
 * already, tmp is removed. Call with the read lock held. ret_hex: LAYER_ID_MAX bytes. */
int layer_store_adopt(const char *state, const char *tmp, char *ret_hex);
/* The same, kept only when the walk names want_hex (a layer pulled from another node):
 * -EBADMSG otherwise, with the hash found in ret_hex; tmp is then left for the caller. */
int layer_store_adopt_verified(const char *state, const char *tmp, const char *want_hex,
                               char *ret_hex);
/* 1 when layers/<hex> exists, 0 when not, -EINVAL for a malformed hex. */
int layer_store_has(const char *state, const char *hex);
/* The store layer an image layer blob of sha256 digest_hex became (layers/.digests/), so that
 * a layer is imported once: 1 with ret_hex, 0 when unknown or collected since. */
int layer_store_digest_lookup(const char *state, const char *digest_hex, char *ret_hex);
int layer_store_digest_record(const char *state, const char *digest_hex, const char *hex);

/* Keep layer hex from gc while the record that will name it is being made (a pull, between
 * a layer's adoption and its template). Counted: each pin needs its unpin. In memory only: a
 * crash drops every pin, and gc then collects what no record names. Pin with the read lock
 * held, so that gc cannot run between finding the layer and pinning it. */
int layer_store_pin(const char *hex);
void layer_store_unpin(const char *hex);

/* Keep layer hex from gc for LAYER_HOLD_S although no record names it: a layer made for another
 * node to pull (a pool snapshot's upper, read into the store when its template is asked for). */
void layer_store_hold(const char *hex);

/* Remove unreferenced, unpinned, unheld layers (and, with startup, leftover temp dirs). Takes
 * the write lock.
 * Returns the number of layers removed. */
int layer_store_gc(const char *state, int startup);

/* Number of layers and their total size in bytes (GET /snapshots extras, metrics). */
int layer_store_usage(const char *state, size_t *ret_layers);
