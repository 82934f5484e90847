/* SPDX-License-Identifier: Apache-2.0 */
#include "core/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#include "macros.h"
#include "missing-syscalls.h"

#define USER_OOM_SCORE_ADJ "100"
#define DEFAULT_PATH       "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static void cap_freep(cap_t *c)
{
        if (*c)
                cap_free(*c);
}

/* ---- child side: only async-signal-safe work from here on ---- */

static size_t str_append(char *buf, size_t o, size_t cap, const char *s)
{
        while (*s && o + 1 < cap)
                buf[o++] = *s++;
        buf[o] = '\0';
        return o;
}

_noreturn_ static void child_fail(const char *what, const char *arg, int err)
{
        char msg[1024];
        size_t o = 0;
        const char *desc = strerrordesc_np(err);

        o = str_append(msg, o, sizeof(msg), "sbx-agent: ");
        o = str_append(msg, o, sizeof(msg), what);
        if (arg) {
                o = str_append(msg, o, sizeof(msg), " \"");
                o = str_append(msg, o, sizeof(msg), arg);
                o = str_append(msg, o, sizeof(msg), "\"");
        }
        o = str_append(msg, o, sizeof(msg), ": ");
        o = str_append(msg, o, sizeof(msg), desc ? desc : "error");
        o = str_append(msg, o, sizeof(msg), "\n");
        (void)!write(STDERR_FILENO, msg, o);
        _exit(err == ENOENT ? 127 : 126);
}

/* Move fd to target (clearing CLOEXEC on the target). */
static int move_fd(int fd, int target)
{
        if (fd == target)
                return fcntl(fd, F_SETFD, 0);
        return dup2(fd, target) < 0 ? -1 : 0;
}

static const char *env_path(const char *const *envp)
{
        for (; *envp; envp++)
                if (strncmp(*envp, "PATH=", 5) == 0)
                        return *envp + 5;
        return DEFAULT_PATH;
}

/* execvpe() searches the agent's PATH; this searches the new environment's. */
/*
 * envd's commands.run and the SDK's PTY start "/bin/bash -l -c CMD" and "/bin/bash -i -l": an
 * image without bash (busybox, Alpine) runs them with its /bin/sh, which takes the same
 * options (guest-agent/README.md, "Images"). Returns only when that fails too; no allocation
 * (the child of a threaded process).
 */
static void exec_sh_for_bash(const char *const *argv, const char *const *envp)
{
        const char *sh_argv[SPAWN_SH_MAX_ARGS + 1];
        size_t n = 0;
        for (; n < SPAWN_SH_MAX_ARGS && argv[n]; n++)
                sh_argv[n] = argv[n];
        if (n == SPAWN_SH_MAX_ARGS && argv[n])
                return;
        sh_argv[0] = SPAWN_SH;
        sh_argv[n] = NULL;
        execve(SPAWN_SH, (char *const *)sh_argv, (char *const *)envp);
        errno = ENOENT; /* what the caller reports: bash is missing */
}

_noreturn_ static void exec_search(const char *const *argv, const char *const *envp)
{
        const char *file = argv[0];
        const char *path;
        char buf[4096];
        int saved = ENOENT;

        if (!*file)
                child_fail("exec", file, ENOENT);
        if (strchr(file, '/')) {
                execve(file, (char *const *)argv, (char *const *)envp);
                if (errno == ENOENT && strcmp(file, SPAWN_BASH) == 0)
                        exec_sh_for_bash(argv, envp);
                child_fail("exec", file, errno);
        }
        path = env_path(envp);
        for (const char *p = path;; p++) {
                const char *end = strchrnul(p, ':');
                size_t dlen = (size_t)(end - p), flen = strlen(file);
                if (dlen == 0) {
                        buf[0] = '.';
                        dlen = 1;
                } else if (dlen < sizeof(buf))
                        memcpy(buf, p, dlen);
                if (dlen + 1 + flen + 1 <= sizeof(buf)) {
                        buf[dlen] = '/';
                        memcpy(buf + dlen + 1, file, flen + 1);
                        execve(buf, (char *const *)argv, (char *const *)envp);
                        if (errno == EACCES)
                                saved = EACCES;
                        else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE &&
                                 errno != ENODEV && errno != ETIMEDOUT)
                                child_fail("exec", file, errno);
                }
                if (!*end)
                        break;
                p = end;
        }
        child_fail("exec", file, saved);
}

_noreturn_ static void child(const struct agent_spawn *s, int in_fd, int out_fd, int err_fd,
                             cap_t caps, uint64_t keep, int max_cap)
{
        sigset_t all;
        int r;

        /* stdio first so that every later failure can be reported on stderr. */
        if (move_fd(err_fd, STDERR_FILENO) < 0)
                _exit(126);
        if (move_fd(out_fd, STDOUT_FILENO) < 0 || move_fd(in_fd, STDIN_FILENO) < 0)
                child_fail("setting up stdio", NULL, errno);
        /* A given working directory stays open as fd 3 (close-on-exec) until the fchdir. */
        bool cwd_fd = s->fds && s->fds[3] >= 0;
        if (cwd_fd && (dup2(s->fds[3], 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0))
                child_fail("keeping the working directory", NULL, errno);
        close_range(cwd_fd ? 4 : 3, ~0U, 0);

        if (setsid() < 0)
                child_fail("setsid", NULL, errno);
        /* A pty slave on stdin becomes the session's controlling terminal. */
        if (s->pty && ioctl(STDIN_FILENO, TIOCSCTTY, 0) < 0)
                child_fail("setting the controlling terminal", NULL, errno);

        /* Under memory pressure the kernel should pick user code before PID 1, as envd sets
         * 100 for its children. Raising the score needs no privilege; best effort, and
         * before the uid change: afterwards /proc/self is not ours (the agent is not dumpable). */
        int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (oom >= 0) {
                (void)!write(oom, USER_OOM_SCORE_ADJ, sizeof(USER_OOM_SCORE_ADJ) - 1);
                close(oom);
        }

        /* Capabilities: the bounding set cut to the user's (needs CAP_SETPCAP, so before the uid
         * change), no ambient set; after the uid change the user's permitted and effective set,
         * an empty inheritable one: nothing for a user, root's six (agent_user_caps) for root,
         * kept by its children across exec (exec grants root at most the bounding set, and
         * under no_new_privs at most what it had). */
        for (int c = 0; c <= max_cap; c++)
                if (!(c < 64 && (keep & AGENT_CAP_BIT(c))) && cap_drop_bound((cap_value_t)c) < 0 &&
                    errno != EINVAL)
                        child_fail("dropping the capability bounding set", NULL, errno);
        if (cap_reset_ambient() < 0 && errno != EINVAL)
                child_fail("clearing ambient capabilities", NULL, errno);

        /* Raw syscalls: glibc's wrappers are fine in a single-threaded child, but this keeps
         * the child free of its setxid machinery. */
        if (syscall(SYS_setgroups, (size_t)s->user->n_groups, s->user->groups) < 0)
                child_fail("setgroups", NULL, errno);
        if (syscall(SYS_setresgid, s->user->gid, s->user->gid, s->user->gid) < 0)
                child_fail("setresgid", NULL, errno);
        if (syscall(SYS_setresuid, s->user->uid, s->user->uid, s->user->uid) < 0)
                child_fail("setresuid", NULL, errno);
        if (cap_set_proc(caps) < 0)
                child_fail("setting capabilities", NULL, errno);

        umask(022);
        for (int sig = 1; sig < NSIG; sig++) {
                if (sig == SIGKILL || sig == SIGSTOP)
                        continue;
                struct sigaction sa = {.sa_handler = SIG_DFL};
                (void)sigaction(sig, &sa, NULL);
        }
        sigemptyset(&all);
        r = sigprocmask(SIG_SETMASK, &all, NULL);
        if (r < 0)
                child_fail("sigprocmask", NULL, errno);

        if (cwd_fd) {
                if (fchdir(3) < 0)
                        child_fail("entering the working directory", NULL, errno);
                close(3);
        } else if (chdir(s->cwd) < 0)
                child_fail("chdir", s->cwd, errno);
        exec_search(s->argv, s->envp);
}

/* ---- parent side ---- */

int agent_spawn(const struct agent_spawn *s, struct agent_spawned *ret)
{
        _cleanup_close_ int in_r = -EBADF, in_w = -EBADF, out_r = -EBADF, out_w = -EBADF,
                            err_r = -EBADF, err_w = -EBADF;
        _cleanup_(cap_freep) cap_t caps = cap_init();
        uint64_t keep = agent_user_caps(s->user->uid);
        int p[2], max_cap;
        pid_t pid;

        if (!caps)
                return negative_errno();
        for (cap_value_t c = 0; c < 64; c++)
                if ((keep & AGENT_CAP_BIT(c)) &&
                    (cap_set_flag(caps, CAP_PERMITTED, 1, &c, CAP_SET) < 0 ||
                     cap_set_flag(caps, CAP_EFFECTIVE, 1, &c, CAP_SET) < 0))
                        return negative_errno();
        max_cap = (int)cap_max_bits() - 1;
        if (max_cap < CAP_LAST_CAP)
                max_cap = CAP_LAST_CAP;

        if (s->fds) {
                /* the caller's fds: nothing to make */
        } else if (s->pty) {
                struct winsize ws = {.ws_col = s->cols, .ws_row = s->rows};
                /* TIOCGPTPEER opens the slave from the master, with no path lookup in /dev/pts
                 * that sandbox code could race. */
                out_r = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (out_r < 0 || unlockpt(out_r) < 0)
                        return negative_errno();
                out_w = ioctl(out_r, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (out_w < 0 || ioctl(out_r, TIOCSWINSZ, &ws) < 0)
                        return negative_errno();
                /* The terminal belongs to its user, as login(1) arranges. */
                if (fchown(out_w, s->user->uid, s->user->gid) < 0 && errno != EPERM)
                        return negative_errno();
                in_w = fcntl(out_r, F_DUPFD_CLOEXEC, 3);
                if (in_w < 0 || fcntl(out_r, F_SETFL, O_NONBLOCK) < 0)
                        return negative_errno();
        } else {
                if (s->stdin_pipe) {
                        if (pipe2(p, O_CLOEXEC) < 0)
                                return negative_errno();
                        in_r = p[0];
                        in_w = p[1];
                } else {
                        in_r = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
                        if (in_r < 0)
                                return negative_errno();
                }
                if (pipe2(p, O_CLOEXEC) < 0)
                        return negative_errno();
                out_r = p[0];
                out_w = p[1];
                if (pipe2(p, O_CLOEXEC) < 0)
                        return negative_errno();
                err_r = p[0];
                err_w = p[1];
                if (fcntl(out_r, F_SETFL, O_NONBLOCK) < 0 || fcntl(err_r, F_SETFL, O_NONBLOCK) < 0)
                        return negative_errno();
        }

        pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                if (s->fds)
                        child(s, s->fds[0], s->fds[1], s->fds[2], caps, keep, max_cap);
                if (s->pty)
                        child(s, out_w, out_w, out_w, caps, keep, max_cap);
                child(s, in_r, out_w, err_w, caps, keep, max_cap);
        }

        *ret = (struct agent_spawned){
            .pid = pid,
            .stdin_fd = TAKE_FD(in_w),
            .stdout_fd = TAKE_FD(out_r),
            .stderr_fd = TAKE_FD(err_r),
        };
        return 0;
}
