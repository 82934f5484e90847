/* SPDX-License-Identifier: Apache-2.0 */
/* PID 1 duties: start-up fix-ups, signals, reaping, and the accept loop. */
#pragma once

/* One-time start-up inside the sandbox: not dumpable, umask 022, /home/user owned by
 * 1000:1000, /tmp mode 1777. Failures of the file fix-ups are logged and tolerated (for
 * development runs outside a sandbox); returns -errno only for prctl failures. */
int agent_init_setup(void);

/*
 * Run the init loop on listen_fd (a listening AF_UNIX stream socket) until SIGTERM/SIGINT.
 * Blocks all signals it handles before any thread exists (every thread inherits the mask) and
 * reads them from a signalfd: SIGCHLD reaps every child with waitid(P_ALL, WEXITED|WNOHANG)
 * (this is the only place that waits) and reports tracked ones to the process table;
 * SIGTERM/SIGINT are forwarded to every process group, then the loop returns the exit code.
 * Accepted connections are served on their own threads (agent_server_spawn). Deadlines of
 * processes are enforced from here.
 */
int agent_init_run(int listen_fd);
