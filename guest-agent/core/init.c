/* SPDX-License-Identifier: Apache-2.0 */
#include "core/init.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/provision.h"
#include "core/server.h"
#include "log.h"
#include "macros.h"
#include "time-util.h"

#define STOP_GRACE_MS 2000

static const struct agent_init_hooks *hooks;
static int wake_fd = -EBADF;

void agent_init_wake(void)
{
        if (wake_fd >= 0)
                (void)eventfd_write(wake_fd, 1);
}

int agent_init_setup(void)
{
        /* No ptrace or /proc/1/mem access to the agent from user code, and no core dumps. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return log_error_errno(errno, "prctl(PR_SET_DUMPABLE): %m");
        /* Outside a pid namespace (development), still collect orphaned grandchildren. */
        if (getpid() != 1)
                (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        umask(022);

        /* The user, its home, /tmp, sudo: what E2B's build adds to every image. Outside a pid
         * namespace (development) the host's files are left alone. */
        if (getpid() == 1)
                agent_provision();
        return 0;
}

static void reap_children(void)
{
        for (;;) {
                siginfo_t si = {0};
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0) {
                        if (errno == EINTR)
                                continue;
                        return; /* ECHILD */
                }
                if (si.si_pid == 0)
                        return;
                if (hooks->child_exited)
                        hooks->child_exited(si.si_pid, si.si_code, si.si_status);
        }
}

/* After forwarding a stop signal: reap until no child is left or grace_ms passed. When PID 1
 * exits, the kernel kills whatever is left in the pid namespace. */
static void wait_children(int sfd, int grace_ms)
{
        int64_t start = now_ms();

        for (;;) {
                struct pollfd pfd = {.fd = sfd, .events = POLLIN};
                struct signalfd_siginfo ssi;
                siginfo_t si = {0};
                int64_t elapsed;

                /* waitid with WNOWAIT: does any child exist at all? */
                reap_children();
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD)
                        return;
                elapsed = now_ms() - start;
                if (elapsed >= grace_ms)
                        return;
                if (poll(&pfd, 1, (int)(grace_ms - elapsed)) > 0)
                        while (read(sfd, &ssi, sizeof(ssi)) > 0)
                                ;
        }
}

bool agent_init_stop_allowed(const struct signalfd_siginfo *ssi, bool pid1)
{
        /* Outside a pid namespace of its own (development) there is no inside to refuse. */
        if (!pid1)
                return true;
        /* From an ancestor pid namespace the kernel writes si_pid 0 itself. A sender inside
         * may also choose si_pid (rt_sigqueueinfo, pidfd_send_signal with a siginfo), but only
         * with a negative si_code other than SI_TKILL: the codes kill(2), tgkill(2) and the
         * kernel use cannot be forged towards another process. */
        if (ssi->ssi_pid != 0)
                return false;
        return ssi->ssi_code == SI_USER || ssi->ssi_code == SI_TKILL || ssi->ssi_code == SI_KERNEL;
}

/* A refused stop signal: logged, at most one line per second (a loop inside the sandbox must
 * not fill the log). */
static void log_refused(const struct signalfd_siginfo *ssi)
{
        static int64_t last_ms = INT64_MIN / 2;
        static unsigned suppressed;
        int64_t now = now_ms();

        if (now - last_ms < 1000) {
                suppressed++;
                return;
        }
        if (suppressed)
                log_warning("signal %d from pid %u inside the sandbox (code %d): ignored, only "
                            "the host stops the agent (and %u more since the last line)",
                            (int)ssi->ssi_signo, ssi->ssi_pid, ssi->ssi_code, suppressed);
        else
                log_warning("signal %d from pid %u inside the sandbox (code %d): ignored, only "
                            "the host stops the agent",
                            (int)ssi->ssi_signo, ssi->ssi_pid, ssi->ssi_code);
        last_ms = now;
        suppressed = 0;
}

static void accept_all(int listen_fd)
{
        for (;;) {
                int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EINTR || errno == ECONNABORTED)
                                continue;
                        if (errno != EAGAIN)
                                log_warning_errno(errno, "accept: %m");
                        return;
                }
                agent_server_spawn(fd);
        }
}

int agent_init_run(int listen_fd, const struct agent_init_hooks *h)
{
        static const struct agent_init_hooks none = {0};
        _cleanup_close_ int sfd = -EBADF, wake = -EBADF;
        sigset_t mask;
        bool pid1;

        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGQUIT);
        sigaddset(&mask, SIGUSR1);
        sigaddset(&mask, SIGUSR2);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "sigprocmask: %m");
        /* Writes to a closed stdin pipe must fail with EPIPE, not kill the agent. */
        signal(SIGPIPE, SIG_IGN);

        pid1 = getpid() == 1;
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0)
                return log_error_errno(errno, "signalfd: %m");
        wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (wake < 0)
                return log_error_errno(errno, "eventfd: %m");
        hooks = h ? h : &none;
        wake_fd = wake;
        if (fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK) < 0)
                return log_error_errno(errno, "listen fd: %m");

        log_info("sbx-agent ready (pid %d)", (int)getpid());
        /* Children that exited before the signalfd existed. */
        reap_children();

        for (;;) {
                struct pollfd pfd[3] = {
                    {.fd = sfd, .events = POLLIN},
                    {.fd = listen_fd, .events = POLLIN},
                    {.fd = wake, .events = POLLIN},
                };
                int timeout = hooks->timers ? hooks->timers() : -1;

                if (poll(pfd, ELEMENTSOF(pfd), timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        return log_error_errno(errno, "poll: %m");
                }
                if (pfd[2].revents) {
                        eventfd_t v;
                        (void)eventfd_read(wake, &v);
                }
                if (pfd[0].revents) {
                        struct signalfd_siginfo ssi;
                        while (read(sfd, &ssi, sizeof(ssi)) == (ssize_t)sizeof(ssi)) {
                                switch (ssi.ssi_signo) {
                                case SIGCHLD:
                                        break; /* reaped below, once per batch */
                                case SIGTERM:
                                case SIGINT:
                                        if (!agent_init_stop_allowed(&ssi, pid1)) {
                                                log_refused(&ssi);
                                                break;
                                        }
                                        log_info("signal %d: stopping", (int)ssi.ssi_signo);
                                        if (hooks->stop)
                                                hooks->stop((int)ssi.ssi_signo);
                                        wait_children(sfd, STOP_GRACE_MS);
                                        return 0;
                                default:
                                        break;
                                }
                        }
                        reap_children();
                }
                if (pfd[1].revents & POLLIN)
                        accept_all(listen_fd);
                else if (pfd[1].revents & (POLLERR | POLLHUP | POLLNVAL))
                        return log_error_errno(EBADF, "listening socket failed");
        }
}
