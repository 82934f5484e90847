/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's REST file transfer: GET /files (download) and POST /files (multipart or raw upload),
 * docs/e2b-wire.md §3.2. File work happens with the selected user's file-system
 * credentials (agent_fs_become), so the kernel checks permissions and new files and
 * directories belong to that user.
 */
#pragma once

#include "core/request.h"

int agent_files_handle_get(struct agent_request *r);
int agent_files_handle_post(struct agent_request *r);

/* Content-Type for a file name, from its extension; NULL when unknown. */
const char *agent_files_mime_type(const char *name);

/* HTTP status for an errno met while reading or writing files (ENOSPC → 507, EACCES → 403,
 * ENOENT → 404, invalid paths → 400, else 500). */
int agent_files_errno_status(int err);
