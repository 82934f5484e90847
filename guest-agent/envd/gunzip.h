/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Streaming gzip decoder for request bodies sent with `Content-Encoding: gzip` (zlib inflate).
 * Input arrives in chunks of any size; output is handed to a sink in pieces of at most
 * AGENT_GUNZIP_CHUNK bytes, so memory stays bounded whatever the compression ratio (the sink,
 * a file on a size-limited disk, bounds the total). Concatenated gzip members are accepted, as
 * Go's gzip.Reader does. No I/O, no logging.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define AGENT_GUNZIP_CHUNK (64u * 1024u)

typedef int (*agent_gunzip_sink)(void *userdata, const uint8_t *buf, size_t len);

struct agent_gunzip;

int agent_gunzip_new(struct agent_gunzip **ret);
void agent_gunzip_free(struct agent_gunzip *g);
void agent_gunzip_freep(struct agent_gunzip **g);

/* Decode buf. Returns 0, -EBADMSG for corrupt data, or the sink's negative value. */
int agent_gunzip_feed(struct agent_gunzip *g, const uint8_t *buf, size_t len,
                      agent_gunzip_sink sink, void *userdata);
/* The input ended: 0 when it ended exactly after a complete member, -EBADMSG otherwise. */
int agent_gunzip_finish(struct agent_gunzip *g);
