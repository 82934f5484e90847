/* SPDX-License-Identifier: Apache-2.0 */
/* sbx-agent: PID 1 of a sandbox. Start-up contract in guest-agent/README.md. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/init.h"
#include "core/build-relay.h"
#include "core/server.h"
#include "log.h"
#include "routes.h"
#include "sudo/sudo.h"

int main(int argc, char **argv)
{
        const char *e = getenv("SBX_AGENT_LISTEN_FD");
        int fd = 3, accepting = 0, r;
        socklen_t len = sizeof(accepting);

        log_setup("sbx-agent", 0);
        /* In a sandbox stderr is a FIFO that sbxd drains at a bounded rate
         * (server/lifecycle/agent-log.h): past it a line is dropped, never waited for. */
        struct stat st;
        if (fstat(STDERR_FILENO, &st) == 0 && S_ISFIFO(st.st_mode))
                (void)fcntl(STDERR_FILENO, F_SETFL, fcntl(STDERR_FILENO, F_GETFL) | O_NONBLOCK);
        if (e) {
                char *end;
                long v = strtol(e, &end, 10);
                if (*end || v < 0 || v > 65535) {
                        log_error("invalid SBX_AGENT_LISTEN_FD=%s", e);
                        return EXIT_FAILURE;
                }
                fd = (int)v;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) < 0 || !accepting) {
                log_error("fd %d is not a listening socket", fd);
                return EXIT_FAILURE;
        }
        r = agent_init_setup();
        if (r < 0)
                return EXIT_FAILURE;
        if (agent_relay_start() < 0)
                return EXIT_FAILURE;
        /* Without it the sandbox still serves everything else: sudo then says it cannot reach
         * the agent. */
        (void)agent_sudo_start();
        agent_server_set_routes(&agent_routes);
        r = agent_init_run(fd, &agent_init_hooks);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
