/* SPDX-License-Identifier: Apache-2.0 */
/* Inside proc/: the table's entries and a spawned process's handle, shared by table.c (the
 * table and the operations by selector), start.c (spawning) and pump.c (running and
 * attaching). table.c calls neither of the others. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "core/spawn.h"
#include "proc/process.h"

struct proc_entry {
        struct proc_entry *next;
        pid_t pid;
        char *tag;
        cJSON *config; /* spec->config, for agent_proc_foreach() */
        int stdin_fd;  /* pipe write end or pty master; -EBADF when /dev/null or closed */
        bool pty;
        int exit_efd;        /* written by agent_proc_on_exit() */
        int64_t deadline_ms; /* CLOCK_MONOTONIC ms, 0 = none */
        bool deadline_killed;
        bool exited;
        struct agent_exit exit;
        struct agent_outlog *log; /* retained output */
        bool finished;            /* its pump is done; kept for attaching only */
        int64_t finished_ms;
};

struct agent_proc {
        struct proc_entry *entry; /* in the table; retired by the pump */
        int out_fd[2];            /* stdout, stderr (or the pty master, alone) */
        bool pty;
        int feed_fd;             /* a non-blocking dup of stdin for stdin_data; -EBADF */
        struct iovec *feed;      /* a copy of spec->stdin_data (the bytes are the caller's) */
        size_t n_feed, feed_off; /* feed_off counts over every part */
};

/* Under the table lock: how the entry's process ended so far, and whether by its deadline. */
void proc_entry_exit_state(struct proc_entry *e, struct agent_exit *ret, bool *ret_deadline);
/* Close the entry's stdin (the feed is done). */
void proc_entry_close_stdin(struct proc_entry *e);
/* The pump is done: keep the entry (exit status, output) for attaching, bounded. */
void proc_table_retire(struct proc_entry *e);
/* For attaching: a running entry matching sel, else the newest finished one. Its pid and a new
 * reference to its log (caller unrefs). -ESRCH. */
int proc_table_attach(const struct agent_selector *sel, pid_t *ret_pid,
                      struct agent_outlog **ret_log);
/* Kill the group of pid (also before its setsid()). */
void proc_kill_group(pid_t pid, int sig);

/* A new entry for spec, before its pid is known (proc_entry_free() until it is in the table).
 * -ENOMEM. */
int proc_entry_new(const struct agent_proc_spec *spec, struct proc_entry **ret);
void proc_entry_free(struct proc_entry *e);
/* Fork s under the table lock (the reaper must find the pid when the child exits) and, when
 * that worked, put e in the table with its pid, stdin and deadline (timeout_ms from now, 0:
 * none). agent_spawn()'s result; e stays the caller's on failure. */
int proc_table_spawn(struct proc_entry *e, const struct agent_spawn *s, int64_t timeout_ms,
                     struct agent_spawned *ret);
