/* SPDX-License-Identifier: Apache-2.0 */
/* Connecting to a sandbox's agent: the socket's name and the connect (api/frames.md). */
#pragma once

#define AGENT_SOCKET_NAME "agent.sock"

/* Connect to <sandbox_dir>/agent.sock (paths past sun_path's 108 bytes go through
 * /proc/self/fd). Returns a blocking, close-on-exec fd or -errno (-ECONNREFUSED/-ENOENT when
 * nobody listens). */
int agent_connect(const char *sandbox_dir, int *ret_fd);
