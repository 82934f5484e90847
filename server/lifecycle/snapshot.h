/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Snapshots: a sandbox's files frozen into a template. The sandbox is frozen (if it was not
 * paused already), its writable upper becomes a store layer (storage/layer-store.h), it is thawed
 * again, and <state>/templates/<snapshotID>/template.json is written: the sandbox's template's
 * config and binds, its layers (template layers imported into the store) plus the new one, all
 * as "sha256:<hex>". Sandbox.create(snapshotID) then starts from identical files (processes
 * and memory are not part of a snapshot). A name registers the same template under that name
 * too. No secret is written: the template holds no token, no env vars of the sandbox, no
 * metadata; each sandbox started from it gets a fresh id and access token.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "core/server.h"
#include "lifecycle/sandbox.h"
#include "core/validate.h"

#define SNAPSHOT_ID_MAX (TEMPLATE_NAME_MAX + 1)
#define FORK_MAX_COUNT  100 /* E2B's SandboxForkRequest: count 1..100 */

/* name may be NULL. hidden: not listed (fork's own snapshot). ret_id: SNAPSHOT_ID_MAX. */
int snapshot_create(struct server *srv, struct sandbox *s, const char *name, bool hidden,
                    char *ret_id, char *errmsg, size_t errlen);
/* {snapshotID, names[]} items, filtered by sandbox id and/or name (both may be NULL), sorted
 * by (creation second, id); at most limit of them after the cursor after (NULL, or
 * "<created>.<id>" from an earlier ret_next). ret_next: the cursor of the next page, "" when
 * there is none. -EINVAL for a malformed cursor. */
int snapshot_list(struct server *srv, const char *sandbox_id, const char *name, const char *after,
                  size_t limit, cJSON **ret, char ret_next[static 64]);
/* Delete snapshot id (or its name) and its aliases, then gc the store. -ENOENT unknown,
 * -EPERM for a template that is not a snapshot. */
int snapshot_delete(struct server *srv, const char *id);

/* Snapshot s once, start count sandboxes from it (fresh ids and tokens, s's metadata and env
 * vars, timeout_s), return [{sandbox}|{error:{code,message}}]. */
int snapshot_fork(struct server *srv, struct sandbox *s, unsigned count, int64_t timeout_s,
                  cJSON **ret, char *errmsg, size_t errlen);
