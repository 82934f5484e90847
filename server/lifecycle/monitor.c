/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/monitor.h"
#include "lifecycle/lifecycle-state.h"

#include <errno.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lifecycle/lifecycle.h"
#include "log.h"
#include "macros.h"
#include "lifecycle/tombstone.h"
#include "core/stats.h"

#define EV_WAKE  UINT64_C(0)
#define EV_CHILD UINT64_MAX

/* sbxd is a child subreaper: agents whose jailer exited are re-parented to it. Reap whatever
 * child exited (agents, jailers): only pidfds are used to wait for a specific one. */
static void reap_children(int sfd)
{
        struct signalfd_siginfo si;
        while (read(sfd, &si, sizeof(si)) == sizeof(si))
                ;
        for (;;) {
                siginfo_t info = {};
                if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG) < 0 || info.si_pid == 0)
                        return;
        }
}

/* epoll data: the sandbox serial (never reused), not the fd number (which is). */
static void *monitor_main(void *arg)
{
        struct server *srv = arg;
        for (;;) {
                struct epoll_event ev[16];
                int n = epoll_wait(srv->lifecycle->monitor_epoll, ev, (int)ELEMENTSOF(ev), -1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        log_error_errno(errno, "monitor: epoll_wait: %m");
                        return NULL;
                }
                for (int i = 0; i < n; i++) {
                        if (ev[i].data.u64 == EV_WAKE)
                                return NULL; /* monitor_stop */
                        if (ev[i].data.u64 == EV_CHILD) {
                                reap_children(srv->lifecycle->monitor_sigchld);
                                continue;
                        }
                        /* NULL when a kill or timeout took it first: nothing to do. */
                        struct sandbox *s = registry_take_serial(srv->registry, ev[i].data.u64);
                        if (s) {
                                log_context_set(NULL, s->id);
                                /* read before teardown removes the memory cgroup */
                                bool oom = sandbox_oom_killed(s);
                                log_warning("sandbox %s: agent (pid %d) exited on its own%s", s->id,
                                            (int)s->pid, oom ? " (out of memory: OOM kill)" : "");
                                if (oom)
                                        stats_count_oom();
                                tombstone_add(s->id, oom ? "it ran out of memory (OOM kill)"
                                                         : "its init process exited");
                                lifecycle_destroy(srv, s, oom ? "OOM kill" : "agent exited");
                                log_context_set(NULL, NULL);
                        }
                }
        }
}

int monitor_start(struct server *srv)
{
        srv->lifecycle->monitor_epoll = epoll_create1(EPOLL_CLOEXEC);
        if (srv->lifecycle->monitor_epoll < 0)
                return -errno;
        srv->lifecycle->monitor_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (srv->lifecycle->monitor_wake < 0)
                return -errno;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_WAKE};
        if (epoll_ctl(srv->lifecycle->monitor_epoll, EPOLL_CTL_ADD, srv->lifecycle->monitor_wake,
                      &ev) < 0)
                return -errno;
        /* SIGCHLD is blocked in every thread (main.c); it is read here. */
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        srv->lifecycle->monitor_sigchld = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
        if (srv->lifecycle->monitor_sigchld < 0)
                return -errno;
        ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = EV_CHILD};
        if (epoll_ctl(srv->lifecycle->monitor_epoll, EPOLL_CTL_ADD, srv->lifecycle->monitor_sigchld,
                      &ev) < 0)
                return -errno;
        int r = pthread_create(&srv->lifecycle->monitor, NULL, monitor_main, srv);
        if (r != 0)
                return -r;
        srv->lifecycle->monitor_started = true;
        return 0;
}

int monitor_watch(struct server *srv, const struct sandbox *s)
{
        if (s->pidfd < 0 || srv->lifecycle->monitor_epoll < 0)
                return 0;
        /* One-shot: a dead agent's pidfd stays readable; one event is all we need. */
        struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = s->serial};
        return epoll_ctl(srv->lifecycle->monitor_epoll, EPOLL_CTL_ADD, s->pidfd, &ev) < 0 ? -errno
                                                                                          : 0;
}

void monitor_unwatch(struct server *srv, const struct sandbox *s)
{
        if (s->pidfd >= 0 && srv->lifecycle->monitor_epoll >= 0)
                epoll_ctl(srv->lifecycle->monitor_epoll, EPOLL_CTL_DEL, s->pidfd, NULL);
}

void monitor_stop(struct server *srv)
{
        if (srv->lifecycle->monitor_started) {
                uint64_t one = 1;
                if (write(srv->lifecycle->monitor_wake, &one, sizeof(one)) < 0)
                        log_warning_errno(errno, "monitor: wake: %m");
                pthread_join(srv->lifecycle->monitor, NULL);
                srv->lifecycle->monitor_started = false;
        }
        srv->lifecycle->monitor_wake = safe_close(srv->lifecycle->monitor_wake);
        srv->lifecycle->monitor_sigchld = safe_close(srv->lifecycle->monitor_sigchld);
        srv->lifecycle->monitor_epoll = safe_close(srv->lifecycle->monitor_epoll);
}

int monitor_register(struct server *srv, struct sandbox *s)
{
        int r = registry_add(srv->registry, s);
        if (r < 0)
                return r;
        r = monitor_watch(srv, s);
        if (r < 0)
                log_warning_errno(r, "sandbox %s: cannot watch the agent: %m", s->id);
        return 0;
}
