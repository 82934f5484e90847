/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The jailer pipeline: the numbered steps of jailer/README.md ("## Steps"), one step_*()
 * function each, run in order. The parent writes exactly one status line on status_fd.
 */
#pragma once

/* Runs the whole pipeline. Returns 0 when the agent runs (status {"ok":true,...} written),
 * 1 on failure (status {"ok":false,...} written when status_fd is usable, sandbox removed). */
int jail_run(int spec_fd, int status_fd);
