/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One process's events as envd's Connect server stream (docs/e2b-wire.md §3.3, §3.5), the
 * listener both process.Process/Start and Connect hand to the process table: the answer head,
 * `start` with the pid, `data` as output comes, `keepalive` after Keepalive-Ping-Interval of
 * silence, `end` and the end of the stream; a process killed by its own timeout ends the stream
 * with deadline_exceeded. The client's connection is polled: once it is readable (the request
 * was read to its END, so that is EOF or garbage) the client is gone and the listener detaches
 * with -ECONNRESET.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/request.h"
#include "proc/process.h"

struct agent_process_stream {
        struct agent_request *r;
        pid_t pid;
        int keepalive_ms;
        int64_t next_keepalive; /* CLOCK_MONOTONIC ms */
        int64_t deadline; /* CLOCK_MONOTONIC ms at which the stream (not the process) ends with
                             deadline_exceeded; 0: none */
        bool starter;     /* Start's stream, on the process's pump: when its client is gone or
                             a write fails, the connection is shut down and its slot given back
                             (agent_server_release_slot()) while the pump drains on */
};

/* Set up s for r: the keepalive interval from its Keepalive-Ping-Interval header, the stream's
 * own deadline timeout_ms from now (0: none). */
void agent_process_stream_init(struct agent_process_stream *s, struct agent_request *r,
                               int64_t timeout_ms, bool starter);

/* The process table's listener writing s (which must outlive it). Its result, as
 * agent_proc_run() / agent_proc_attach() return it: 0 or what agent_respond_end() returned once
 * the stream was ended, or -errno when the client went or could not be written to (-EPIPE,
 * -ECONNRESET) or a message could not be built (-ENOMEM). */
struct agent_proc_listener agent_process_stream_listener(struct agent_process_stream *s);
