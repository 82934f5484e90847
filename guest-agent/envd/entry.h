/* SPDX-License-Identifier: Apache-2.0 */
/*
 * filesystem.EntryInfo as envd reports it (docs/e2b-wire.md §3.6): name, type, path,
 * size, mode, permissions (Go's FileMode.String()), owner and group names (from the sandbox's
 * /etc/passwd and /etc/group, numeric when unknown), modified time (RFC 3339), symlink target
 * and metadata (the file's `user.e2b.*` xattrs, as POST /files stores X-Metadata-* headers).
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>
#include <sys/stat.h>

/* uid/gid → name tables, loaded once per request (bounded reads of /etc/passwd, /etc/group). */
struct agent_idmap;

int agent_idmap_load(struct agent_idmap **ret);
void agent_idmap_free(struct agent_idmap *m);
static inline void agent_idmap_freep(struct agent_idmap **m)
{
        agent_idmap_free(*m);
}

/* The xattr namespace user metadata lives in, and the key bounds envd enforces. */
#define AGENT_XATTR_PREFIX       "user.e2b."
#define AGENT_METADATA_KEY_MAX   246u
#define AGENT_METADATA_TOTAL_MAX 4096u

/* Go's os.FileMode.String() for a st_mode ("-rw-r--r--", "drwxr-xr-x", "Lrwxrwxrwx", ...). buf
 * needs 16 bytes. */
const char *agent_mode_string(mode_t mode, char buf[static 16]);

/* protojson Timestamp text for ts (0, 3, 6 or 9 fractional digits). buf needs 40 bytes. */
const char *agent_timestamp(const struct timespec *ts, char buf[static 40]);

/*
 * EntryInfo of path as a new cJSON object (caller owns). st is path's lstat (NULL: lstat is
 * called). A symlink is reported as envd 0.6.13 does: the target's type and mode (none when it
 * cannot be stat-ed), never FILE_TYPE_SYMLINK, its own name, size, permissions, owner and time,
 * and symlinkTarget, the resolved path (the link's own path when unresolvable). -errno from
 * lstat, -ENOMEM.
 */
int agent_entry_info(const char *path, const struct stat *st, const struct agent_idmap *ids,
                     cJSON **ret);

/* The user.e2b.* xattrs of path (not following a final symlink) as a JSON object; NULL result
 * (return 0) when there are none. */
int agent_entry_metadata(const char *path, cJSON **ret);
