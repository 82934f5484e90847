/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's retained output, for process.Process/Connect (re-attach): the pump appends every
 * chunk it reads, the log keeps the newest AGENT_OUTLOG_MAX bytes (older chunks are dropped),
 * and records how the process ended. Connect streams serve from it: `start` with the pid, the
 * retained output, whatever follows live, then `end` (or the deadline error) and `{}`.
 * Reference-counted: the process table and every Connect stream hold a reference.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "envd/connect-json.h"
#include "core/server.h"

#define AGENT_OUTLOG_MAX (1024u * 1024u)

struct agent_outlog;

/* A new log with one reference. NULL on ENOMEM. */
struct agent_outlog *agent_outlog_new(void);
struct agent_outlog *agent_outlog_ref(struct agent_outlog *l);
void agent_outlog_unref(struct agent_outlog *l);

/* Append one chunk (dropping the oldest past AGENT_OUTLOG_MAX). -ENOMEM (the chunk is lost). */
int agent_outlog_append(struct agent_outlog *l, enum agent_output_stream kind, const uint8_t *buf,
                        size_t len);

/* The process ended (deadline_killed: by its Connect-Timeout-Ms). Wakes every reader. */
void agent_outlog_finish(struct agent_outlog *l, const struct agent_exit *ex, bool deadline_killed);

/* Bytes currently retained (tests, diagnostics). */
size_t agent_outlog_bytes(struct agent_outlog *l);

/*
 * Serve a Connect stream for pid from l on r: head, start, retained and live output, keepalives
 * every keepalive_ms without other events, end. timeout_ms > 0 ends the stream (not the process)
 * with deadline_exceeded. Returns when the stream is complete or the client left.
 */
int agent_outlog_serve(struct agent_outlog *l, struct agent_request *r, uint32_t pid,
                       int keepalive_ms, int64_t timeout_ms);
