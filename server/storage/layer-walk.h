/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The canonical walk of the layer store (layer-store.h): a tree's entries in byte order, each
 * hashed (type, mode, owner, size, content, link target, whiteouts, opaque dirs, user xattrs,
 * hard-link identity) and, for a copy, written into a new tree. Private to storage/: the
 * store (layer-store.c) names, refs and collects layers; this file only walks, copies and
 * hashes one tree.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "sha256.h"

#define WALK_MAX_DEPTH 256
#define OPAQUE_XATTR   "trusted.overlay.opaque"
/* Content is hashed and copied in pieces of this size (copy_content). */
#define CONTENT_CHUNK (64 * 1024)

#define WALK_MAX_HARDLINKED 65536 /* multiply-linked files tracked per layer; more are copied */

struct hardlinked {
        ino_t ino;
        char *path; /* its first copy, relative to the layer's root; NULL: a free slot */
};

struct walk {
        struct sha256 h;
        bool upper;    /* shift owners into sandbox ids, keep whiteouts */
        bool link;     /* hard-link regular files instead of copying them */
        bool no_links; /* hash (hash_dir) every name of a multiply-linked file as a file */
        uid_t base;    /* host id of sandbox id 0 (upper) */
        uid_t count;   /* ids mapped from base on (upper) */
        dev_t dev;     /* never leave this file system */
        int dst_root;  /* the new layer's root dir */
        /* files with st_nlink > 1 copied so far, an open-addressing table on the inode
         * number (size a power of two, at most half full): their other names become links */
        struct hardlinked *seen;
        size_t n_seen, cap_seen;
        /* WALK_SCRATCH bytes on first use (walk_scratch()): xattr names, one xattr value, one
         * piece of file content. On the heap, not thread-local: glibc puts static TLS on every
         * thread's stack, small relay threads included. */
        char *scratch;
};

struct stat;

/* Free what a walk collected (hard-link table, scratch); the hash is left as it is. */
void layer_walk_done(struct walk *w);
/* An owner id as the layer stores it (shifted back to sandbox ids for an upper). */
unsigned layer_walk_map_id(const struct walk *w, unsigned id);
/* Hash one entry's head: its path from the layer's root ("" for the root) and stat. */
void layer_walk_hash_entry(struct walk *w, const char *path, const struct stat *st);
/* Copy the tree under sdfd into ddfd (w->dst_root), hashing it; a mount point is skipped. */
int layer_walk_copy(struct walk *w, int sdfd, int ddfd);
/* Hash the tree under sdfd without writing anything (adopt); a mount point is refused. */
int layer_walk_hash(struct walk *w, int sdfd);
