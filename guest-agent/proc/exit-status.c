/* SPDX-License-Identifier: Apache-2.0 */
#include "proc/exit-status.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "macros.h"

/* Signal names from Go's syscall signal table for linux/amd64. */
static const char *const go_signal_names[] = {
    [SIGHUP] = "hangup",
    [SIGINT] = "interrupt",
    [SIGQUIT] = "quit",
    [SIGILL] = "illegal instruction",
    [SIGTRAP] = "trace/breakpoint trap",
    [SIGABRT] = "aborted",
    [SIGBUS] = "bus error",
    [SIGFPE] = "floating point exception",
    [SIGKILL] = "killed",
    [SIGUSR1] = "user defined signal 1",
    [SIGSEGV] = "segmentation fault",
    [SIGUSR2] = "user defined signal 2",
    [SIGPIPE] = "broken pipe",
    [SIGALRM] = "alarm clock",
    [SIGTERM] = "terminated",
    [SIGSTKFLT] = "stack fault",
    [SIGCHLD] = "child exited",
    [SIGCONT] = "continued",
    [SIGSTOP] = "stopped (signal)",
    [SIGTSTP] = "stopped",
    [SIGTTIN] = "stopped (tty input)",
    [SIGTTOU] = "stopped (tty output)",
    [SIGURG] = "urgent I/O condition",
    [SIGXCPU] = "CPU time limit exceeded",
    [SIGXFSZ] = "file size limit exceeded",
    [SIGVTALRM] = "virtual timer expired",
    [SIGPROF] = "profiling timer expired",
    [SIGWINCH] = "window changed",
    [SIGIO] = "I/O possible",
    [SIGPWR] = "power failure",
    [SIGSYS] = "bad system call",
};

const char *agent_signal_name(int sig, char buf[static 16])
{
        if (sig > 0 && (size_t)sig < ELEMENTSOF(go_signal_names) && go_signal_names[sig])
                return go_signal_names[sig];
        snprintf(buf, 16, "signal %d", sig);
        return buf;
}

void agent_exit_from_siginfo(int code, int status, struct agent_exit *ret)
{
        char nbuf[16];

        memset(ret, 0, sizeof(*ret));
        if (code == CLD_EXITED) {
                ret->exit_code = status;
                ret->exited = true;
                ret->has_error = status != 0;
                snprintf(ret->status, sizeof(ret->status), "exit status %d", status);
                return;
        }
        ret->exit_code = -1;
        ret->exited = false;
        ret->has_error = true;
        snprintf(ret->status, sizeof(ret->status), "signal: %s%s", agent_signal_name(status, nbuf),
                 code == CLD_DUMPED ? " (core dumped)" : "");
}
