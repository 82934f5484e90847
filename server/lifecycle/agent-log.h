/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's stderr on the host, bounded (server/README.md, "What a sandbox writes on the
 * host"). The agent is as untrusted as the code beside it, and its stderr (the jailer's
 * before it) is the only byte stream from inside a sandbox to a host file. It is a FIFO in the
 * sandbox dir, AGENT_LOG_FIFO_NAME, which one thread of sbxd drains into SANDBOX_LOG_NAME:
 *
 * - at most AGENT_LOG_RATE bytes a second on average (AGENT_LOG_BURST at once after a quiet
 *   while); past it sbxd stops reading that FIFO until the budget refills, the FIFO fills and
 *   the agent's writes fail (it writes its stderr non-blocking and drops the line), so a
 *   flooding sandbox costs sbxd neither CPU nor disk; one line in the log says so;
 * - SANDBOX_LOG_NAME is renamed to AGENT_LOG_OLD_NAME (replacing it) when the next write
 *   would pass AGENT_LOG_MAX_BYTES: at most twice that per sandbox, removed with its dir;
 * - sbxd never parses what it copies.
 *
 * While sbxd is down nothing reads the FIFO: what the agent writes then fills the FIFO's
 * buffer (kept, read after adoption) and the rest is dropped by the agent.
 */
#pragma once

#include <stddef.h>

#define AGENT_LOG_FIFO_NAME "agent.fifo"
#define AGENT_LOG_OLD_NAME  "agent.log.1"
#define AGENT_LOG_MAX_BYTES (1u << 20)    /* one file; two are kept */
#define AGENT_LOG_RATE      (16u * 1024)  /* bytes per second, on average */
#define AGENT_LOG_BURST     (256u * 1024) /* bytes at once after a quiet while */

struct agent_log;

/* Start the thread that drains every sandbox's FIFO. Once, at start-up. */
int agent_log_start(void);

/* Make (if missing) and open the FIFO of the sandbox dir dir, and drain it from now on into
 * dir's SANDBOX_LOG_NAME. The FIFO's path goes to *fifo_path (what the jailer's stderr opens).
 * -errno; nothing is left registered on failure. */
int agent_log_open(const char *dir, struct agent_log **ret, char *fifo_path, size_t size);

/* Copy what the FIFO holds now into the log (within the rate), e.g. before reading the tail of
 * the log for an error. NULL is fine. */
void agent_log_flush(struct agent_log *l);

/* Stop draining and close. NULL is fine. */
void agent_log_close(struct agent_log *l);
