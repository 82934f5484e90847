/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One execution on a kernel, streamed to the client as NDJSON (e2b-wire.md §4.1):
 * number_of_executions, stdout/stderr lines with timestamps as they are read, results and
 * errors in the order the kernel produced them, keepalive after 5 s of silence, then
 * end_of_execution. A client that leaves gets its kernel interrupted (SIGINT to the process
 * group, state kept); a kernel that does not come back within CODE_INTERRUPT_GRACE_MS is
 * killed. The caller holds the context's exec lock and has sent the 200 head.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "interp/code-kernel.h"
#include "core/server.h"

#define CODE_KEEPALIVE_MS       5000
#define CODE_INTERRUPT_GRACE_MS 3000
#define CODE_MAX_KERNEL_LINE    (64u * 1024u * 1024u)
#define CODE_TAIL_HOLD_MS       15
#define CODE_STREAM_CHUNK       (32u * 1024u)

struct code_exec {
        unsigned execution_count;
        const char *code;
        size_t code_len;
        const cJSON *env_vars; /* object of strings, or NULL */
        const char *notice;    /* a stderr line sent before the execution's output, or NULL */
};

/*
 * Run x on k and stream it to r. Returns 0 when the kernel is still usable, -ECHILD when it
 * died or was killed (the caller frees it; an error line was sent if the client was there),
 * or another -errno for local failures (kernel killed as well).
 */
int code_exec_run(struct agent_request *r, struct code_kernel *k, const struct code_exec *x);
