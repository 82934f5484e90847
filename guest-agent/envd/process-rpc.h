/* SPDX-License-Identifier: Apache-2.0 */
/*
 * envd's process.Process service over Connect (JSON codec; docs/e2b-wire.md §3.3, §3.5), on
 * the process table's C API (proc/process.h): the Start and Connect server streams
 * (envd/process-start.c, envd/process-connect.c, both written by envd/process-stream.c) and the
 * unary RPCs (envd/process-rpc.c).
 * Errors are worded as envd words them: an unknown pid or tag is not_found.
 */
#pragma once

#include <cjson/cJSON.h>

#include "core/request.h"

/* POST /process.Process/Start: start a process and stream its events. */
int agent_process_handle_start(struct agent_request *r);
/* POST /process.Process/Connect: re-attach to a running or finished process. */
int agent_process_handle_connect(struct agent_request *r);

/* POST /process.Process/{List,SendSignal,SendInput,CloseStdin,Update} (unary). */
int agent_process_handle_list(struct agent_request *r);
int agent_process_handle_send_signal(struct agent_request *r);
int agent_process_handle_send_input(struct agent_request *r);
int agent_process_handle_close_stdin(struct agent_request *r);
int agent_process_handle_update(struct agent_request *r);

/* Any other /process.Process/ or /filesystem.Filesystem/ method: Connect `unimplemented`
 * (a stream error for a Connect stream request, else unary), after draining the body. */
int agent_connect_handle_unimplemented(struct agent_request *r);

/* The ProcessConfig that List reports for a process not started through Start: {"cmd",
 * "args", "envs"?, "cwd"?} (caller deletes). NULL on ENOMEM. */
cJSON *agent_process_config_json(const char *const *argv, const cJSON *envs, const char *cwd);
