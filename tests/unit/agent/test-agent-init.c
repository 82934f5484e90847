/* SPDX-License-Identifier: Apache-2.0 */
/*
 * PID 1's signal rules (core/init.c). First the decision itself, then agent_init_run() as PID 1
 * of a new pid namespace: every stop a process inside sends (kill, tgkill, a sigqueue forging
 * si_pid 0, SIGKILL, SIGSTOP, the other signals the agent handles) leaves it running and its
 * stop hook untouched; SIGTERM from this test, outside the namespace, reaches the stop hook and
 * ends the loop. The namespace part needs root.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/init.h"
#include "macros.h"
#include "unit.h"

static bool allowed(int code, unsigned pid, bool pid1)
{
        struct signalfd_siginfo s = {.ssi_signo = SIGTERM, .ssi_code = code, .ssi_pid = pid};
        return agent_init_stop_allowed(&s, pid1);
}

static void test_decision(void)
{
        /* From the host: kill(2), tgkill(2) or the kernel, si_pid 0 inside the namespace. */
        CHECK(allowed(SI_USER, 0, true));
        CHECK(allowed(SI_TKILL, 0, true));
        CHECK(allowed(SI_KERNEL, 0, true));
        /* From inside: a real pid, or a code under which the sender chose si_pid itself. */
        CHECK(!allowed(SI_USER, 7, true));
        CHECK(!allowed(SI_TKILL, 7, true));
        CHECK(!allowed(SI_QUEUE, 0, true));
        CHECK(!allowed(SI_MESGQ, 0, true));
        CHECK(!allowed(SI_ASYNCIO, 0, true));
        /* Development runs (not PID 1): anyone may stop the agent. */
        CHECK(allowed(SI_USER, 7, false));
        CHECK(allowed(SI_QUEUE, 0, false));
}

/* ---- the init loop as PID 1 ---- */

static int report_fd = -EBADF, go_fd = -EBADF;

static void say(const char *fmt, ...) _printf_(1, 2);
static void say(const char *fmt, ...)
{
        char line[64];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        (void)!write(report_fd, line, (size_t)n);
}

static int hook_timers(void)
{
        /* The first turn of the loop: the signalfd exists, the inside process may start. */
        if (go_fd >= 0) {
                (void)!write(go_fd, "g", 1);
                go_fd = safe_close(go_fd);
        }
        return -1;
}

static void hook_exited(pid_t pid, int code, int status)
{
        say("X %ld %d\n", (long)pid, code == CLD_EXITED ? status : 1000 + status);
}

static void hook_stop(int sig)
{
        say("S %d\n", sig);
}

/* Inside the namespace: every way to signal PID 1; exits with the number of sends that
 * failed. */
_noreturn_ static void inside(int go_r)
{
        static const int sigs[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT, SIGUSR1,
                                   SIGUSR2, SIGKILL, SIGSTOP, SIGSEGV, SIGABRT};
        siginfo_t si = {.si_signo = SIGTERM, .si_code = SI_QUEUE};
        int failed = 0;
        char c;

        if (read(go_r, &c, 1) != 1)
                _exit(100);
        for (size_t i = 0; i < ELEMENTSOF(sigs); i++)
                failed += kill(1, sigs[i]) < 0;
        failed += syscall(SYS_tgkill, 1, 1, SIGTERM) < 0;
        failed += syscall(SYS_tgkill, 1, 1, SIGINT) < 0;
        /* sigqueue with a forged si_pid 0, as the host's signals look. */
        si.si_pid = 0;
        si.si_uid = 0;
        failed += syscall(SYS_rt_sigqueueinfo, 1, SIGTERM, &si) < 0;
        _exit(failed);
}

_noreturn_ static void init_child(int go_r, int go_w)
{
        static const struct agent_init_hooks hooks = {
            .child_exited = hook_exited,
            .timers = hook_timers,
            .stop = hook_stop,
        };
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        pid_t pid;
        int r;

        /* The dispositions the agent has after exec (sanitizers install handlers for SIGSEGV
         * and others, which a pid namespace's init would then receive from inside). */
        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        (void)sigaction(sig, &(struct sigaction){.sa_handler = SIG_DFL}, NULL);
        /* An unnamed socket: bind with no path autobinds an abstract address. */
        if (getpid() != 1 || lfd < 0 ||
            bind(lfd, (struct sockaddr *)&sa, sizeof(sa_family_t)) < 0 || listen(lfd, 4) < 0)
                _exit(90);
        pid = fork();
        if (pid < 0)
                _exit(91);
        if (pid == 0) {
                close(go_w);
                close(report_fd);
                inside(go_r);
        }
        close(go_r);
        go_fd = go_w;
        say("G %ld\n", (long)pid);
        r = agent_init_run(lfd, &hooks);
        say("R %d\n", r);
        _exit(0);
}

/* Pending signals of pid (SigPnd and ShdPnd of /proc/<pid>/status); -1 when unreadable. */
static long long pending(pid_t pid, char *state)
{
        char path[64], line[256];
        long long sum = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, "SigPnd:", 7) == 0 || strncmp(line, "ShdPnd:", 7) == 0)
                        sum |= strtoll(line + 7, NULL, 16);
                if (strncmp(line, "State:", 6) == 0)
                        *state = line[7];
        }
        fclose(f);
        return sum;
}

/* PID 1 of a new pid namespace, forked by a helper that stays outside it and exits with its
 * status: this process keeps its own namespace for its later children (LeakSanitizer's
 * too). Returns PID 1's pid as seen here. */
static pid_t fork_pid1(int rep[2], int go[2], pid_t *ret_helper)
{
        int ap[2], st;
        pid_t a = -1, m;

        if (pipe2(ap, O_CLOEXEC) < 0)
                return -1;
        m = fork();
        if (m == 0) {
                close(ap[0]);
                if (unshare(CLONE_NEWPID) < 0) {
                        fprintf(stderr, "unshare(CLONE_NEWPID): %m\n");
                        _exit(80);
                }
                a = fork();
                if (a == 0) {
                        close(rep[0]);
                        report_fd = rep[1];
                        init_child(go[0], go[1]);
                }
                (void)!write(ap[1], &a, sizeof(a));
                close(rep[1]);
                close(go[0]);
                close(go[1]);
                if (a < 0 || waitpid(a, &st, 0) != a)
                        _exit(81);
                _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 82);
        }
        close(ap[1]);
        if (m < 0 || read(ap[0], &a, sizeof(a)) != (ssize_t)sizeof(a))
                a = -1;
        close(ap[0]);
        *ret_helper = m;
        return a;
}

static void test_pid1(void)
{
        int rep[2], go[2], status = -1;
        long inside_pid = -1, inside_status = -1, stop_sig = 0, run_rc = -1;
        bool stopped_early = false;
        char state = '?';
        FILE *f;
        pid_t a, m = -1;

        CHECK_EQ_INT(pipe2(rep, O_CLOEXEC), 0);
        CHECK_EQ_INT(pipe2(go, O_CLOEXEC), 0);
        a = fork_pid1(rep, go, &m);
        CHECK(a > 0);
        close(rep[1]);
        close(go[0]);
        close(go[1]);
        f = fdopen(rep[0], "r");
        CHECK(f != NULL);

        /* Until the inside process was reaped: every signal it sent was delivered by then. */
        for (char line[64]; inside_status < 0 && fgets(line, sizeof(line), f);) {
                long x, y;
                if (sscanf(line, "G %ld", &x) == 1)
                        inside_pid = x;
                else if (sscanf(line, "X %ld %ld", &x, &y) == 2 && x == inside_pid)
                        inside_status = y;
                else if (sscanf(line, "S %ld", &x) == 1)
                        stopped_early = true;
        }
        CHECK_EQ_INT(inside_status, 0); /* every send succeeded, none was refused by the kernel */
        CHECK(!stopped_early);
        if (inside_status != 0 || stopped_early) {
                fclose(f);
                if (a > 0)
                        (void)kill(a, SIGKILL);
                (void)waitpid(m, &status, 0);
                return;
        }
        /* The agent read them all (a SIGTERM still pending would swallow ours) and is not stopped.
         */
        for (long long p; (p = pending(a, &state)) > 0;)
                usleep(1000);
        CHECK(state != 'T' && state != 't' && state != 'Z');
        CHECK_EQ_INT(kill(a, 0), 0);
        CHECK_EQ_INT(waitpid(m, &status, WNOHANG), 0);

        /* From outside the namespace: the stop hook runs and the loop returns. */
        CHECK_EQ_INT(kill(a, SIGTERM), 0);
        for (char line[64]; fgets(line, sizeof(line), f);) {
                long x;
                if (sscanf(line, "S %ld", &x) == 1)
                        stop_sig = x;
                else if (sscanf(line, "R %ld", &x) == 1)
                        run_rc = x;
        }
        fclose(f);
        CHECK_EQ_INT(stop_sig, SIGTERM);
        CHECK_EQ_INT(run_rc, 0);
        CHECK_EQ_INT(waitpid(m, &status, 0), m);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
        test_decision();
        if (geteuid() != 0)
                fprintf(stderr, "not root: skipping the pid namespace test\n");
        else
                test_pid1();
        return unit_finish("test-agent-init");
}
