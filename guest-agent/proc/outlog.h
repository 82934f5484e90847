/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A process's retained output, for re-attaching to it (agent_proc_attach()): the pump appends
 * every chunk it reads, the log keeps the newest AGENT_OUTLOG_MAX bytes in at most
 * AGENT_OUTLOG_MAX_CHUNKS chunks (older chunks are dropped), and records how the process ended.
 * Readers walk it by sequence number, waiting for what comes next. Bytes only: what a chunk
 * becomes on a wire is the reader's business. Reference-counted: the process table and every
 * reader hold a reference.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proc/exit-status.h"

#define AGENT_OUTLOG_MAX        (1024u * 1024u)
#define AGENT_OUTLOG_MAX_CHUNKS 4096u

/* Which of a process's outputs a chunk came from. */
enum agent_output_stream { AGENT_OUT_STDOUT, AGENT_OUT_STDERR, AGENT_OUT_PTY };

struct agent_outlog;

/* A new log with one reference. NULL on ENOMEM. */
struct agent_outlog *agent_outlog_new(void);
struct agent_outlog *agent_outlog_ref(struct agent_outlog *l);
void agent_outlog_unref(struct agent_outlog *l);

/* Append one chunk (dropping the oldest past the bounds). -ENOMEM (the chunk is lost). */
int agent_outlog_append(struct agent_outlog *l, enum agent_output_stream stream, const uint8_t *buf,
                        size_t len);

/* The process ended (deadline_killed: by its deadline). Wakes every reader. */
void agent_outlog_finish(struct agent_outlog *l, const struct agent_exit *ex, bool deadline_killed);

/* Bytes currently retained (tests, diagnostics). */
size_t agent_outlog_bytes(struct agent_outlog *l);

struct agent_outlog_item {
        enum { AGENT_OUTLOG_NONE, AGENT_OUTLOG_CHUNK, AGENT_OUTLOG_END } kind;
        enum agent_output_stream stream; /* CHUNK */
        uint8_t *data;                   /* CHUNK: a copy, the caller frees it */
        size_t len;
        struct agent_exit exit; /* END */
        bool deadline_killed;   /* END */
};

/*
 * The next item for a reader that has seen everything before *seq (start at 0): the oldest
 * retained chunk at or after it (a reader that fell behind skips what was dropped), else END
 * once the process ended, else NONE after waiting until wait_until_ms (CLOCK_MONOTONIC) for
 * either. *seq moves past a chunk returned. 0, or -ENOMEM.
 */
int agent_outlog_next(struct agent_outlog *l, uint64_t *seq, int64_t wait_until_ms,
                      struct agent_outlog_item *ret);
