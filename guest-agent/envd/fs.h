/* SPDX-License-Identifier: Apache-2.0 */
/*
 * filesystem.Filesystem (docs/e2b-wire.md §3.6): the unary RPCs Stat, MakeDir,
 * Move, ListDir, Remove (this file) and the watch RPCs (envd/watch.c). Every operation runs
 * with the selected user's file-system credentials, so the kernel checks permissions.
 */
#pragma once

#include <cjson/cJSON.h>

#include "core/request.h"
#include "core/users.h"

/* POST /filesystem.Filesystem/{Stat,MakeDir,Move,ListDir,Remove} (unary). */
int agent_fs_handle_stat(struct agent_request *r);
int agent_fs_handle_make_dir(struct agent_request *r);
int agent_fs_handle_move(struct agent_request *r);
int agent_fs_handle_list_dir(struct agent_request *r);
int agent_fs_handle_remove(struct agent_request *r);

/* Shared by envd/watch.c. */

/* Connect code for an errno met on a path. */
const char *agent_fs_errno_code(int err);

/* Read a unary (or, with stream, one-envelope) JSON request, select the user, and resolve the
 * string field `field` into *ret_path. Returns 1 on success; otherwise the error has been
 * answered (stream or unary) and the answer's result is returned. */
int agent_fs_request(struct agent_request *r, bool stream, cJSON **ret_root, struct agent_user *u,
                     const char *field, char **ret_path);
