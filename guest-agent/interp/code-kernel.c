/* SPDX-License-Identifier: Apache-2.0 */
#include "interp/code-kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "core/spawn.h"
#include "core/users.h"
#include "fd-util.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"
#include "time-util.h"

#define DEFAULT_PATH    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define PYTHON_BIN      "/usr/bin/python3"
#define NODE_BIN        "/usr/bin/node"
#define BASH_BIN        "/bin/bash"
#define CODE_SOCKET_DIR "/run/sbx-code"

const char *code_kernels_dir(void)
{
        const char *d = getenv("SBX_CODE_KERNELS_DIR");
        return d && *d ? d : CODE_KERNELS_DIR_DEFAULT;
}

bool code_kernels_available(void)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/python/kernel.py", code_kernels_dir());
        return access(path, R_OK) == 0;
}

bool code_kernel_alive(struct code_kernel *k)
{
        struct pollfd p = {.fd = k->pidfd, .events = POLLIN};
        return k->pidfd >= 0 && poll(&p, 1, 0) == 0;
}

void code_kernel_signal(struct code_kernel *k, int sig)
{
        /* Alive means not reaped: the process group id cannot have been reused. */
        if (k && code_kernel_alive(k)) {
                (void)kill(-k->pid, sig);
                (void)pidfd_send_signal(k->pidfd, sig, NULL, 0);
        }
}

void code_kernel_free(struct code_kernel *k)
{
        if (!k)
                return;
        code_kernel_signal(k, SIGKILL);
        safe_close(k->pidfd);
        safe_close(k->sock);
        safe_close(k->in_fd);
        safe_close(k->out_fd);
        safe_close(k->err_fd);
        strv_free(k->genv);
        buf_done(&k->rbuf);
        free(k);
}

/* The kernel's environment: what a process started through envd gets, plus the kernel's own
 * variables (which the kernels remove from their environment at start-up). */
static int kernel_env(const struct agent_user *u, const char *const *extra, char ***ret_env,
                      char ***ret_genv)
{
        _cleanup_strv_free_ char **genv = NULL;
        const char *path = getenv("PATH");
        size_t n = 0, cap;
        char **env;
        int e;

        e = agent_config_envs(&genv);
        if (e < 0)
                return e;
        for (char **p = genv; *p; p++)
                n++;
        cap = n + 16;
        env = calloc(cap, sizeof(char *));
        if (!env)
                return -ENOMEM;
        n = 0;
        if (asprintf(&env[n++], "PATH=%s", path && *path ? path : DEFAULT_PATH) < 0 ||
            asprintf(&env[n++], "HOME=%s", u->home) < 0 ||
            asprintf(&env[n++], "USER=%s", u->name) < 0 ||
            asprintf(&env[n++], "LOGNAME=%s", u->name) < 0 ||
            !(env[n++] = strdup("SHELL=/bin/bash")) || !(env[n++] = strdup("LANG=C.UTF-8")) ||
            !(env[n++] = strdup("PYTHONIOENCODING=utf-8"))) {
                strv_free(env);
                return -ENOMEM;
        }
        for (char **p = genv; *p; p++)
                if (!(env[n++] = strdup(*p))) {
                        strv_free(env);
                        return -ENOMEM;
                }
        for (; *extra; extra++)
                if (n + 1 < cap && !(env[n++] = strdup(*extra))) {
                        strv_free(env);
                        return -ENOMEM;
                }
        *ret_env = env;
        *ret_genv = TAKE_PTR(genv);
        return 0;
}

/* A listening unix socket at a fresh path in CODE_SOCKET_DIR (root-only writable, so nobody
 * can plant anything there); mode 0600: only root, which kernels run as, can connect. The path
 * is written to out; the caller unlinks it once the kernel connected (or failed to). */
static int listen_path(char out[static 108])
{
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        char hex[17];
        struct stat st;

        if (fd < 0)
                return negative_errno();
        if (mkdir(CODE_SOCKET_DIR, 0711) < 0 && errno != EEXIST)
                return negative_errno();
        if (lstat(CODE_SOCKET_DIR, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
                return -EPERM;
        if (random_hex(hex, 8) < 0)
                return -EIO;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/k-%s.sock", CODE_SOCKET_DIR, hex);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return negative_errno();
        if (chmod(sa.sun_path, 0600) < 0 || listen(fd, 4) < 0) {
                int e = negative_errno();
                (void)unlink(sa.sun_path);
                return e;
        }
        memcpy(out, sa.sun_path, sizeof(sa.sun_path));
        return TAKE_FD(fd);
}

/* Accept the kernel's connection: only the kernel's own pid passes (SO_PEERCRED). */
static int accept_kernel(int lfd, struct code_kernel *k, int64_t deadline)
{
        for (;;) {
                struct pollfd p[2] = {{.fd = lfd, .events = POLLIN},
                                      {.fd = k->pidfd, .events = POLLIN}};
                int64_t left = deadline - now_ms();
                struct ucred cred;
                socklen_t clen = sizeof(cred);
                int fd;

                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(p, 2, (int)left) < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (p[1].revents)
                        return -ECHILD;
                if (!p[0].revents)
                        continue;
                fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        continue;
                if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 &&
                    cred.pid == k->pid)
                        return fd;
                safe_close(fd);
        }
}

/* Wait for the ready signal: "Y\n" on the socket, or the bash marker for seq 0 on stderr.
 * Bytes before it (bash's start-up warnings) are dropped. */
static int wait_ready(struct code_kernel *k, int64_t deadline)
{
        int fd = k->sock >= 0 ? k->sock : k->err_fd;
        char buf[4096];

        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                int64_t left = deadline - now_ms();
                size_t start, end;
                unsigned seq;
                int status;
                ssize_t n;

                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(&p, 1, (int)left) < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                n = read(fd, buf, sizeof(buf));
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n <= 0)
                        return -ECHILD;
                if (buf_add(&k->rbuf, buf, (size_t)n) < 0)
                        return -ENOMEM;
                if (k->sock >= 0) {
                        char *nl = memchr(k->rbuf.p, '\n', k->rbuf.len);
                        if (!nl)
                                continue;
                        bool ok = k->rbuf.p[0] == 'Y';
                        buf_consume(&k->rbuf, (size_t)(nl - k->rbuf.p) + 1);
                        if (ok)
                                return 0;
                        continue;
                }
                if (bash_marker_scan(k->rbuf.p, k->rbuf.len, k->nonce, &start, &end, &seq,
                                     &status) == 1) {
                        buf_consume(&k->rbuf, end);
                        return 0;
                }
                buf_consume(&k->rbuf, start);
        }
}

/* CODE_KERNEL_USER with the /init default user's group as its primary group (and among its
 * groups), so that what a kernel creates belongs to that group (code-kernel.h). */
static int kernel_user(struct agent_user *ret)
{
        _cleanup_free_ char *defuser = NULL;
        struct agent_user u = {0}, d = {0};
        gid_t *g;
        int e;

        e = agent_user_lookup(CODE_KERNEL_USER, &u);
        if (e < 0)
                return e;
        if (agent_config_default_user(&defuser) >= 0 && agent_user_lookup(defuser, &d) >= 0) {
                g = reallocarray(u.groups, (size_t)u.n_groups + 1, sizeof(gid_t));
                if (!g) {
                        agent_user_done(&u);
                        agent_user_done(&d);
                        return -ENOMEM;
                }
                u.groups = g;
                u.groups[u.n_groups++] = d.gid;
                u.gid = d.gid;
                agent_user_done(&d);
        }
        *ret = u;
        return 0;
}

static int spawn_kernel(struct code_kernel *k, const char *cwd, bool preload, const char *sockname)
{
        _cleanup_free_ char *script = NULL, *sockvar = NULL, *noncevar = NULL;
        _cleanup_strv_free_ char **env = NULL;
        struct agent_user u = {0};
        struct agent_spawned sp;
        /* A shell sets the umask and execs the kernel (same pid): files the kernel creates are
         * writable by its group, the default user's. */
        const char *argv[16] = {"/bin/sh", "-c",
                                "umask " CODE_KERNEL_UMASK " && exec \"$0\" \"$@\""};
        const char *extra[8] = {0};
        size_t ne = 0;
        int e;

        e = kernel_user(&u);
        if (e < 0)
                return e;
        if (k->lang == CODE_LANG_PYTHON) {
                e = asprintf(&script, "%s/python/kernel.py", code_kernels_dir());
                argv[3] = PYTHON_BIN, argv[4] = script;
        } else if (k->lang == CODE_LANG_BASH) {
                e = asprintf(&script, "%s/bash/kernelrc", code_kernels_dir());
                argv[3] = BASH_BIN, argv[4] = "--noprofile", argv[5] = "--rcfile";
                argv[6] = script, argv[7] = "--noediting", argv[8] = "-i";
        } else {
                e = asprintf(&script, "%s/javascript/kernel.mjs", code_kernels_dir());
                argv[3] = NODE_BIN, argv[4] = script;
        }
        if (e < 0 || asprintf(&sockvar, "SBX_KERNEL_SOCKET=%s", sockname ? sockname : "") < 0 ||
            asprintf(&noncevar, "SBX_KERNEL_NONCE=%s", k->nonce) < 0) {
                agent_user_done(&u);
                return -ENOMEM;
        }
        extra[ne++] = sockname ? sockvar : noncevar;
        if (preload)
                extra[ne++] = "SBX_KERNEL_PRELOAD=1";
        e = kernel_env(&u, extra, &env, &k->genv);
        if (e >= 0) {
                struct agent_spawn s = {.argv = argv,
                                        .envp = (const char *const *)env,
                                        .cwd = cwd,
                                        .user = &u,
                                        .stdin_pipe = k->lang == CODE_LANG_BASH};
                e = agent_spawn(&s, &sp);
        }
        agent_user_done(&u);
        if (e < 0)
                return e;
        k->pid = sp.pid;
        k->in_fd = sp.stdin_fd;
        k->out_fd = sp.stdout_fd;
        k->err_fd = sp.stderr_fd;
        k->pidfd = pidfd_open(sp.pid, 0);
        return k->pidfd < 0 ? negative_errno() : 0;
}

/* What a kernel that failed to start said on stderr goes to the agent's log. */
static void log_start_failure(struct code_kernel *k, int e)
{
        char buf[2048];
        ssize_t n = k->err_fd >= 0 ? read(k->err_fd, buf, sizeof(buf) - 1) : -1;

        if (k->lang == CODE_LANG_BASH && k->rbuf.len) {
                n = (ssize_t)MIN(k->rbuf.len, sizeof(buf) - 1);
                memcpy(buf, k->rbuf.p, (size_t)n);
        }
        buf[n > 0 ? n : 0] = '\0';
        log_warning_errno(e, "%s kernel did not start: %m%s%s", code_lang_name(k->lang),
                          n > 0 ? ": " : "", buf);
}

int code_kernel_start(enum code_lang lang, const char *cwd, bool preload, int timeout_ms,
                      struct code_kernel **ret)
{
        _cleanup_close_ int lfd = -EBADF;
        char sockname[108] = "";
        int64_t deadline = now_ms() + timeout_ms;
        struct code_kernel *k;
        int e;

        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        *k =
            (struct code_kernel){.lang = lang == CODE_LANG_TYPESCRIPT ? CODE_LANG_JAVASCRIPT : lang,
                                 .pidfd = -EBADF,
                                 .sock = -EBADF,
                                 .in_fd = -EBADF,
                                 .out_fd = -EBADF,
                                 .err_fd = -EBADF};
        if (k->lang == CODE_LANG_BASH) {
                e = random_hex(k->nonce, 16);
        } else {
                e = lfd = listen_path(sockname);
        }
        if (e >= 0)
                e = spawn_kernel(k, cwd, preload, k->lang == CODE_LANG_BASH ? NULL : sockname);
        if (e >= 0 && lfd >= 0) {
                e = accept_kernel(lfd, k, deadline);
                if (e >= 0)
                        k->sock = e;
        }
        if (sockname[0])
                (void)unlink(sockname);
        if (e >= 0)
                e = wait_ready(k, deadline);
        if (e < 0) {
                log_start_failure(k, e);
                code_kernel_free(k);
                return e;
        }
        *ret = k;
        return 0;
}
