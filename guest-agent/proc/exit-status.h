/* SPDX-License-Identifier: Apache-2.0 */
/* How a process ended, in the words of Go's os.ProcessState, which envd reports and the native
 * API repeats ("exit status 1", "signal: killed"). Pure. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

struct agent_exit {
        int32_t exit_code; /* -1 when signalled */
        bool exited;       /* false when signalled */
        bool has_error;    /* status is also the error text (non-zero exit or signal) */
        char status[96];   /* "exit status 1", "signal: killed", "... (core dumped)" */
};

/* Fill *ret from a waitid() si_code (CLD_EXITED, CLD_KILLED, CLD_DUMPED) and si_status. */
void agent_exit_from_siginfo(int code, int status, struct agent_exit *ret);

/* Go's text for a signal ("killed", "terminated"; "signal 42" when unnamed). */
const char *agent_signal_name(int sig, char buf[static 16]);
