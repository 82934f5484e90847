/* SPDX-License-Identifier: Apache-2.0 */
/* Path resolution as envd does it (pure string work, no file system access). */
#pragma once

/*
 * Resolve a client-supplied path for a user: an empty path becomes default_dir (when given),
 * "~" and "~/x" expand to home, a relative path is joined to home, and the result is cleaned
 * lexically (".", ".." and repeated slashes removed, as Go's filepath.Clean). The result is
 * absolute and allocated (caller frees). -EINVAL for "~other" or an empty result, -ENOMEM.
 */
int agent_path_resolve(const char *path, const char *home, const char *default_dir, char **ret);

/* Pointer to the last component of a cleaned absolute path ("/" for "/"). */
const char *agent_path_basename(const char *path);
