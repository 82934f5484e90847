/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /files helpers: X-Metadata-* upload headers (stored as `user.e2b.<key>` xattrs, envd's
 * bounds), Accept-Encoding negotiation (envd's rules: gzip or identity, 406 when nothing is
 * acceptable) and a gzip-encoded download body.
 */
#pragma once

#include <stdbool.h>

#include "core/request.h"

struct agent_metadata {
        size_t n;
        char *keys[64];
        char *values[64];
};

/* Collect X-Metadata-<key> headers (key lower-cased, empty keys dropped, first value wins).
 * -EINVAL with a static message in *ret_msg for a value that is not printable ASCII, a key over
 * 246 bytes, more than 64 keys or over 4096 bytes in total; -ENOMEM. */
int agent_metadata_parse(const struct agent_request *r, struct agent_metadata *ret,
                         const char **ret_msg);
void agent_metadata_done(struct agent_metadata *m);

/* Make m the file's whole metadata, as envd's WriteMetadata: every user.e2b.* xattr of fd that
 * m lacks is removed (an overwritten file keeps its xattrs), then every key of m is set as a
 * user.e2b.<key> xattr. -errno. */
int agent_metadata_replace(const struct agent_metadata *m, int fd);

/* Add the metadata as a "metadata" object to o (nothing when empty). -ENOMEM. */
int agent_metadata_to_json(const struct agent_metadata *m, void *cjson_object);

/* Accept-Encoding: 1 for gzip, 0 for identity, -EINVAL when identity is refused and gzip is
 * not acceptable either (406). */
int agent_accept_encoding(const char *header);

/* Send size bytes of fd gzip-compressed as DATA frames (after the head), then END. */
int agent_files_send_gzip(struct agent_request *r, int fd);
