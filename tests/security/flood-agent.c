/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A PID 1 that floods its stderr, as code that took over the agent would (the red-team case of
 * docs/escape-battery.md A12): bound as the agent by a private sbxd
 * (tests/integration/agent-log.test.mjs, --agent), it forks a child that writes to the
 * inherited stderr as fast as it can, forever, with blocking writes where the descriptor
 * lets it, then execs the real agent from the runtime dir (--runtime) so the sandbox serves
 * as usual. Static: it runs in the sandbox's root.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv, char **envp)
{
        static char buf[65536];
        (void)argc;
        memset(buf, 'X', sizeof(buf));
        buf[sizeof(buf) - 1] = '\n';
        pid_t pid = fork();
        if (pid == 0) {
                for (;;)
                        if (write(STDERR_FILENO, buf, sizeof(buf)) < 0) {
                                if (errno != EAGAIN)
                                        _exit(1);
                                usleep(1000); /* the agent made it non-blocking: full */
                        }
        }
        execve("/.sbx/runtime/sbx-agent", argv, envp);
        return 127;
}
