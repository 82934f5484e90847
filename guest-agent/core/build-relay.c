/* SPDX-License-Identifier: Apache-2.0 */
#include "core/build-relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"
#include "macros.h"

static struct sockaddr_un relay_target;
static int relay_active; /* __atomic */

/* Copy what one side has to the other; 0 at EOF of src, -errno. */
static int pump(int src, int dst, char *buf)
{
        ssize_t n = read(src, buf, RELAY_BUFFER);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 1 : -errno;
        if (n == 0)
                return 0;
        return write_full(dst, buf, (size_t)n) < 0 ? -EPIPE : 1;
}

static void *relay_conn(void *arg)
{
        _cleanup_close_ int in = (int)(intptr_t)arg;
        _cleanup_close_ int out = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        _cleanup_free_ char *buf = malloc(RELAY_BUFFER);
        if (out >= 0 && buf &&
            connect(out, (struct sockaddr *)&relay_target, sizeof(relay_target)) == 0) {
                struct pollfd p[2] = {{.fd = in, .events = POLLIN}, {.fd = out, .events = POLLIN}};
                bool open_in = true, open_out = true;
                while (open_in || open_out) {
                        p[0].fd = open_in ? in : -1;
                        p[1].fd = open_out ? out : -1;
                        if (poll(p, 2, -1) < 0 && errno != EINTR)
                                break;
                        int r = 1;
                        if (open_in && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
                                r = pump(in, out, buf);
                                if (r == 0) {
                                        open_in = false;
                                        shutdown(out, SHUT_WR);
                                }
                        }
                        if (r >= 0 && open_out && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
                                r = pump(out, in, buf);
                                if (r == 0) {
                                        open_out = false;
                                        shutdown(in, SHUT_WR);
                                }
                        }
                        if (r < 0)
                                break;
                }
        }
        __atomic_sub_fetch(&relay_active, 1, __ATOMIC_RELAXED);
        return NULL;
}

static void *relay_accept(void *arg)
{
        int lfd = (int)(intptr_t)arg;
        for (;;) {
                int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0) {
                        if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
                                continue;
                        break;
                }
                pthread_t t;
                if (__atomic_add_fetch(&relay_active, 1, __ATOMIC_RELAXED) >
                        RELAY_MAX_CONNECTIONS ||
                    pthread_create(&t, NULL, relay_conn, (void *)(intptr_t)c) != 0) {
                        __atomic_sub_fetch(&relay_active, 1, __ATOMIC_RELAXED);
                        close(c);
                        continue;
                }
                pthread_detach(t);
        }
        close(lfd);
        return NULL;
}

int agent_relay_start(void)
{
        const char *v = getenv(RELAY_ENV);
        if (!v || !*v)
                return 0;
        char *end;
        long port = strtol(v, &end, 10);
        if (port < 1 || port > 65535 || *end != '=' || end[1] != '/' ||
            strlen(end + 1) >= sizeof(relay_target.sun_path))
                return log_error_errno(-EINVAL, "invalid %s=%s", RELAY_ENV, v);
        relay_target.sun_family = AF_UNIX;
        snprintf(relay_target.sun_path, sizeof(relay_target.sun_path), "%s", end + 1);

        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int one = 1;
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
                return log_error_errno(-errno, "egress relay on 127.0.0.1:%ld: %m", port);
        /* the relay's threads take no signals: PID 1 reads them from its signalfd */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        pthread_t t;
        int r = pthread_create(&t, NULL, relay_accept, (void *)(intptr_t)fd);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0)
                return log_error_errno(-r, "egress relay thread: %m");
        TAKE_FD(fd);
        pthread_detach(t);
        return 0;
}
