/* SPDX-License-Identifier: Apache-2.0 */
#include "lifecycle/jail-spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "json-util.h"
#include "macros.h"
#include "missing-syscalls.h"
#include <sys/pidfd.h>
#include "time-util.h"

static void result_set(struct jail_result *ret, const char *step, int err, const char *msg)
{
        ret->ok = 0;
        snprintf(ret->step, sizeof(ret->step), "%s", step);
        ret->err = err < 0 ? -err : err;
        snprintf(ret->message, sizeof(ret->message), "%s", msg);
}

int jail_parse_status(const char *line, struct jail_result *ret)
{
        struct jail_result r = {};
        cJSON *j = cJSON_Parse(line);
        if (!cJSON_IsObject(j)) {
                cJSON_Delete(j);
                return -EBADMSG;
        }
        const cJSON *ok = cJSON_GetObjectItemCaseSensitive(j, "ok");
        const cJSON *pid = cJSON_GetObjectItemCaseSensitive(j, "pid");
        const cJSON *step = cJSON_GetObjectItemCaseSensitive(j, "step");
        const cJSON *err = cJSON_GetObjectItemCaseSensitive(j, "errno");
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(j, "message");
        int rr = 0;
        if (cJSON_IsTrue(ok)) {
                if (!cJSON_IsNumber(pid) || pid->valuedouble < 2 || pid->valuedouble > 4194304)
                        rr = -EBADMSG;
                r.ok = 1;
                r.pid = rr == 0 ? (pid_t)pid->valuedouble : 0;
        } else if (cJSON_IsFalse(ok)) {
                /* Bounded before the conversion: a double outside int's range is undefined. */
                bool err_ok =
                    cJSON_IsNumber(err) && err->valuedouble >= 0 && err->valuedouble <= 4095;
                result_set(&r, cJSON_IsString(step) ? step->valuestring : "unknown",
                           err_ok ? (int)err->valuedouble : 0,
                           cJSON_IsString(msg) ? msg->valuestring : "no message");
        } else {
                rr = -EBADMSG;
        }
        cJSON_Delete(j);
        if (rr < 0)
                return rr;
        *ret = r;
        return 0;
}

/* Read up to the first '\n' (or EOF) within the deadline. */
static int read_status_line(int fd, int64_t deadline, char *buf, size_t cap)
{
        size_t len = 0;
        for (;;) {
                int64_t left = deadline - now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                struct pollfd p = {.fd = fd, .events = POLLIN};
                int n = poll(&p, 1, (int)left);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -ETIMEDOUT;
                ssize_t k = read(fd, buf + len, cap - 1 - len);
                if (k < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return len > 0 ? 0 : -EPIPE;
                len += (size_t)k;
                buf[len] = 0;
                char *nl = memchr(buf, '\n', len);
                if (nl) {
                        *nl = 0;
                        return 0;
                }
                if (len >= cap - 1)
                        return -EMSGSIZE;
        }
}

#ifndef P_PIDFD
#define P_PIDFD 3 /* linux/wait.h; glibc 2.36's idtype_t lacks it */
#endif

/* Wait up to ms for the jailer to exit (force: don't wait), SIGKILL it and its process group
 * when it is still there, and reap it. Through the pidfd: sbxd is a child subreaper whose
 * monitor thread reaps every exited child, so the jailer may already be reaped, and its pid
 * number then means nothing. */
static void reap(pid_t pid, int pidfd, int ms, int force)
{
        if (pidfd < 0) { /* no pidfd support: plain pid, as before pidfds */
                if (force)
                        kill(-pid, SIGKILL), kill(pid, SIGKILL);
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                return;
        }
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        if (force || poll(&p, 1, ms) <= 0) {
                /* still running, so pid is still its own (and its group's, after setsid) */
                if (poll(&p, 1, 0) == 0)
                        kill(-pid, SIGKILL);
                pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
                poll(&p, 1, 1000);
        }
        siginfo_t si;
        while (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0 && errno == EINTR)
                ;
}

static int text_memfd(const char *text, size_t len, int *ret)
{
        int r;
        _cleanup_close_ int fd = memfd_create("sbx-jail-spec", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        r = write_full(fd, text, len);
        if (r < 0)
                return r;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        /* Move above the fds we dup2 onto, so posix_spawn's dup2 never hits src == dst. */
        int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
        if (high < 0)
                return -errno;
        *ret = high;
        return 0;
}

static int spec_memfd(const struct sbx_jail_spec *spec, int *ret)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = sbx_jail_spec_encode(spec, &text, &len);
        return r < 0 ? r : text_memfd(text, len, ret);
}

/* pidfd >= 0: the egress attach of a running sandbox (--attach-egress, its pidfd on fd 5). */
static int do_spawn(const char *jailer, const char *log_path, int spec_fd, int status_w, int pidfd,
                    pid_t *ret_pid)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        sigset_t none, def;
        char *const argv[] = {(char *)"sbx-jailer",
                              (char *)"--spec-fd",
                              (char *)"3",
                              (char *)"--status-fd",
                              (char *)"4",
                              pidfd >= 0 ? (char *)"--attach-egress" : NULL,
                              (char *)"--pidfd",
                              (char *)"5",
                              NULL};
        const char *lvl = getenv("SBX_LOG_LEVEL");
        char lvlenv[64];
        snprintf(lvlenv, sizeof(lvlenv), "SBX_LOG_LEVEL=%s", lvl ? lvl : "info");
        char *const envp[] = {
            (char *)"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", lvlenv,
            NULL};

        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&at);
        sigemptyset(&none);
        sigfillset(&def);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        /* Not sbxd's stderr: it becomes the agent's, and must outlive sbxd (jailer/README.md). */
        posix_spawn_file_actions_addopen(&fa, 2, log_path,
                                         O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0600);
        posix_spawn_file_actions_adddup2(&fa, spec_fd, 3);
        posix_spawn_file_actions_adddup2(&fa, status_w, 4);
        if (pidfd >= 0)
                posix_spawn_file_actions_adddup2(&fa, pidfd, 5);
        posix_spawn_file_actions_addclosefrom_np(&fa, pidfd >= 0 ? 6 : 5);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &def);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                          POSIX_SPAWN_SETSIGDEF);
        int r = posix_spawn(ret_pid, jailer, &fa, &at, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        return -r;
}

int jail_spawn(const char *jailer, const char *log_path, const struct sbx_jail_spec *spec,
               struct jail_result *ret)
{
        int unused;
        return jail_spawn_during(jailer, log_path, spec, NULL, NULL, &unused, ret);
}

static int run_jailer(const char *jailer, const char *log_path, int spec_fd, int attach_pidfd,
                      int (*during)(void *arg), void *arg, int *ret_during,
                      struct jail_result *ret);

int jail_spawn_during(const char *jailer, const char *log_path, const struct sbx_jail_spec *spec,
                      int (*during)(void *arg), void *arg, int *ret_during, struct jail_result *ret)
{
        _cleanup_close_ int spec_fd = -EBADF;
        *ret = (struct jail_result){};
        *ret_during = 0;
        int r = spec_memfd(spec, &spec_fd);
        if (r < 0) {
                result_set(ret, "spawn", r, "cannot prepare the jail spec");
                return r;
        }
        return run_jailer(jailer, log_path, spec_fd, -EBADF, during, arg, ret_during, ret);
}

int jail_attach_egress(const char *jailer, const char *log_path, int pidfd, uint32_t uid_base,
                       const struct sbx_jail_egress *e, struct jail_result *ret)
{
        _cleanup_close_ int spec_fd = -EBADF, high = -EBADF;
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        _cleanup_free_ char *text = NULL;
        int unused, r = -ENOMEM;
        *ret = (struct jail_result){};
        if (o && cJSON_AddNumberToObject(o, "uid_base", uid_base) &&
            (r = sbx_jail_egress_encode(o, e)) >= 0)
                r = (text = cJSON_PrintUnformatted(o)) ? 0 : -ENOMEM;
        if (r >= 0)
                r = text_memfd(text, strlen(text), &spec_fd);
        /* above the fds we dup2 onto, as the spec's */
        if (r >= 0 && (high = fcntl(pidfd, F_DUPFD_CLOEXEC, 10)) < 0)
                r = -errno;
        if (r < 0) {
                result_set(ret, "spawn", r, "cannot prepare the attach spec");
                return r;
        }
        return run_jailer(jailer, log_path, spec_fd, high, NULL, NULL, &unused, ret);
}

static int run_jailer(const char *jailer, const char *log_path, int spec_fd, int attach_pidfd,
                      int (*during)(void *arg), void *arg, int *ret_during, struct jail_result *ret)
{
        _cleanup_close_ int status_r = -EBADF, status_w = -EBADF;
        int pfd[2], r;
        pid_t pid;
        char line[JAIL_STATUS_MAX], msg[256];

        if (pipe2(pfd, O_CLOEXEC) < 0) {
                r = -errno;
                result_set(ret, "spawn", r, "pipe2 failed");
                return r;
        }
        status_r = pfd[0];
        status_w = fcntl(pfd[1], F_DUPFD_CLOEXEC, 10);
        safe_close(pfd[1]);
        if (status_w < 0) {
                r = -errno;
                result_set(ret, "spawn", r, "fcntl failed");
                return r;
        }

        r = do_spawn(jailer, log_path, spec_fd, status_w, attach_pidfd, &pid);
        if (r < 0) {
                snprintf(msg, sizeof(msg), "cannot execute %s: %s", jailer, strerror(-r));
                result_set(ret, "spawn", r, msg);
                return r;
        }
        status_w = safe_close(status_w);
        _cleanup_close_ int pidfd = pidfd_open(pid, 0);
        *ret_during = during ? during(arg) : 0;

        r = read_status_line(status_r, now_ms() + JAIL_STATUS_TIMEOUT_MS, line, sizeof(line));
        if (r < 0) {
                reap(pid, pidfd, 0, 1);
                snprintf(msg, sizeof(msg), "%s",
                         r == -ETIMEDOUT ? "no status from the jailer within 10 s"
                                         : "the jailer exited without a status");
                result_set(ret, "status", r, msg);
                return r == -ETIMEDOUT ? r : -EIO;
        }
        r = jail_parse_status(line, ret);
        if (r < 0) {
                reap(pid, pidfd, 0, 1);
                result_set(ret, "status", r, "malformed status line from the jailer");
                return r;
        }
        reap(pid, pidfd, 5000, 0);
        return 0;
}
