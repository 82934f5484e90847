/* SPDX-License-Identifier: Apache-2.0 */
/* PID 1 duties: start-up fix-ups, signals, reaping, and the accept loop. */
#pragma once

#include <stdbool.h>
#include <sys/signalfd.h>
#include <sys/types.h>

/* What the init loop calls outside core/ (the process table, wired by guest-agent/main.c). Every
 * hook may be NULL. */
struct agent_init_hooks {
        /* A child was reaped: its pid and waitid()'s si_code and si_status. */
        void (*child_exited)(pid_t pid, int code, int status);
        /* Enforce what is due (process deadlines); returns ms until the next, or -1. */
        int (*timers)(void);
        /* Forward a stop signal (SIGTERM, SIGINT) to whatever was started. */
        void (*stop)(int sig);
};

/* One-time start-up inside the sandbox: not dumpable, umask 022, /home/user owned by
 * 1000:1000, /tmp mode 1777. Failures of the file fix-ups are logged and tolerated (for
 * development runs outside a sandbox); returns -errno only for prctl failures. */
int agent_init_setup(void);

/*
 * Run the init loop on listen_fd (a listening AF_UNIX stream socket) until SIGTERM/SIGINT.
 * Blocks all signals it handles before any thread exists (every thread inherits the mask) and
 * reads them from a signalfd: SIGCHLD reaps every child with waitid(P_ALL, WEXITED|WNOHANG)
 * (this is the only place that waits) and hands each to hooks->child_exited; SIGTERM/SIGINT
 * from the host (agent_init_stop_allowed) go to hooks->stop, then the loop returns the exit
 * code; from inside the sandbox they are logged and ignored, as are SIGHUP, SIGQUIT, SIGUSR1
 * and SIGUSR2 from anyone. Accepted connections are served on
 * their own threads (agent_server_spawn). hooks->timers runs on every turn of the loop, which
 * sleeps no longer than it asks.
 */
int agent_init_run(int listen_fd, const struct agent_init_hooks *hooks);

/*
 * Whether a stop signal read from the signalfd may stop the agent. As PID 1 of the sandbox's
 * pid namespace (pid1): only when it comes from outside the namespace, which the kernel shows as
 * si_pid 0 with a code a sender inside cannot forge (SI_USER, SI_TKILL, SI_KERNEL). Signals
 * the agent does not block never reach it from inside: the kernel drops default-action signals
 * sent to a pid namespace's init from within, SIGKILL and SIGSTOP included. Not PID 1
 * (development runs): always.
 */
bool agent_init_stop_allowed(const struct signalfd_siginfo *ssi, bool pid1);

/* Make the init loop run hooks->timers again soon (a new deadline was set). Any thread; a
 * no-op while no init loop runs (tests). */
void agent_init_wake(void);
