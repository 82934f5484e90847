/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process table and the process.Process/Start stream.
 *
 * Every started process has an entry (pid, tag, config, stdin, exit status, deadline) in one
 * table shared by all threads under a mutex. The reaper (core/init.c) is the only code that
 * waits for children: it hands exit statuses to agent_process_on_exit(), which records them
 * and wakes the process's pump through an eventfd. The pump is the connection thread that ran
 * Start: it streams output while its client is connected and keeps draining output after the
 * client left, until the process has exited. Every chunk also goes to the process's retained
 * output log (proc/outlog.h) that Connect streams read. When the Start stream is done the
 * entry stays, finished, for Connect: at most RETAIN_FINISHED of them, for RETAIN_MS.
 * Deadlines (Connect-Timeout-Ms) are enforced by the init loop, so a process is killed on
 * time whether or not anybody is streaming it.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/server.h"

/* ProcessSelector: by tag when tag is non-NULL, else by pid. */
struct agent_selector {
        uint32_t pid;
        const char *tag;
};

/* Handle POST /process.Process/Start (Connect server stream, JSON codec). */
int agent_process_handle_start(struct agent_request *r);

/* Reaper hook: child pid ended (si_code/si_status from waitid). Unknown pids are ignored. */
void agent_process_on_exit(pid_t pid, int code, int status);

/* Kill the process group of every expired deadline. Returns milliseconds until the next
 * deadline, or -1 when there is none. */
int agent_process_enforce_deadlines(void);

/* An eventfd the table writes to when a deadline is added, so the init loop recomputes its
 * poll timeout. Set once before any connection is served. */
void agent_process_set_wake_fd(int fd);

/* Send sig to the process group of every running process (shutdown). */
void agent_process_signal_all(int sig);

/* Table queries for the unary RPCs (envd/process-rpc.c). All return -ESRCH when no running
 * process matches (an exited one no longer does).
 * signal: send sig to the process's group.
 * input_fd: a CLOEXEC dup of its stdin pipe or pty master (caller closes; -EBADF when stdin
 *   is /dev/null or closed); *ret_pty tells which.
 * close_stdin: close the stdin pipe (idempotent); -ENOTTY for a pty process.
 * list_json: `{"processes":[{"config":..,"pid":..,"tag":..}]}` (caller frees). */
int agent_process_signal(const struct agent_selector *sel, int sig);
int agent_process_input_fd(const struct agent_selector *sel, bool *ret_pty, int *ret_fd);
int agent_process_close_stdin(const struct agent_selector *sel);
int agent_process_list_json(char **ret);

/* Unary process.Process RPCs: List, SendSignal, SendInput, CloseStdin, Update. -ENOENT for
 * other methods (nothing answered then). */
int agent_process_handle_rpc(struct agent_request *r, const char *method);

/* Number of running entries (tests, diagnostics). */
unsigned agent_process_count(void);

struct agent_outlog;
/* For Connect: a running process matching sel, else the newest retained finished one. Sets its
 * pid and a new reference to its output log (caller unrefs). -ESRCH when none. */
int agent_process_attach(const struct agent_selector *sel, uint32_t *ret_pid,
                         struct agent_outlog **ret_log);

/* Handle POST /process.Process/Connect (server stream). */
int agent_process_handle_connect(struct agent_request *r);
