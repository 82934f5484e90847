/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Log lines that a sandbox's own traffic causes (a request the TLS proxy refuses, a server
 * that did not prove its name, a connection past the limits, a pin sbxd refused), bounded so
 * that no sandbox can flood the log: sbx-egress's stderr is sbxd's log, the operator's journal
 * (server/README.md "What a sandbox writes on the host").
 *
 * Within each window of EGRESS_LOG_WINDOW_MS, at most EGRESS_LOG_PER_SANDBOX lines for one
 * sandbox (its uid slot) and EGRESS_LOG_ALL for all of them together are written; the rest are
 * counted, and the slot's next line written says how many of its own were left out (a
 * sandbox refused in a loop writes ten lines a minute, each naming how many it stands for).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "log.h"
#include "macros.h"

#define EGRESS_LOG_WINDOW_MS   60000
#define EGRESS_LOG_PER_SANDBOX 10  /* lines per sandbox per window */
#define EGRESS_LOG_ALL         200 /* lines of all sandboxes together per window */

/* One limiter: a window per slot and one for every slot together (slot -1: a line no slot can
 * be told for, the common window only). */
struct egress_log_limit;

int egress_log_limit_new(struct egress_log_limit **ret);
void egress_log_limit_free(struct egress_log_limit *l);

/* Whether a line for slot may be written at now_ms (a monotonic clock, in ms): true, with
 * *ret_left_out the slot's lines left out since its last written one (0 for none), or false,
 * the line counted as left out. */
bool egress_log_admit(struct egress_log_limit *l, int slot, int64_t now_ms, unsigned *ret_left_out);

/* Log at level a line caused by slot's traffic, through the process's own limiter, unless the
 * sandbox or all of them had their share of the window. Thread-safe. */
void egress_slot_log(enum log_level level, int slot, const char *fmt, ...) _printf_(3, 4);
