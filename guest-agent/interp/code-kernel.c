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
#define CODE_SOCKET_DIR "/run/sbx-code"

const char *code_kernels_dir(void)
{
        const char *d = getenv("SBX_CODE_KERNELS_DIR");
        return d && *d ? d : CODE_KERNELS_DIR_DEFAULT;
}

/* A row's kernel program: in code_kernels_dir(), or the absolute path of a template's. */
static char *program_path(const struct code_language *lang)
{
        char *p;

        if (lang->program[0] == '/')
                return strdup(lang->program);
        return asprintf(&p, "%s/%s", code_kernels_dir(), lang->program) < 0 ? NULL : p;
}

bool code_kernels_available(void)
{
        _cleanup_free_ char *path = program_path(code_language_default());
        return path && access(path, R_OK) == 0;
}

const char *code_kernel_preload(const struct code_language *lang)
{
        return lang->preload && access(lang->preload, R_OK) == 0 ? lang->preload : NULL;
}

/* name in the agent's PATH (the template's, else the default), as the kernel's shell will find
 * it: images put python3 in /usr/local/bin (python:3.x) or /usr/bin (Debian). */
static bool in_path(const char *name)
{
        const char *path = getenv("PATH");
        char buf[4096];
        if (!path || !*path)
                path = DEFAULT_PATH;
        for (const char *p = path;; p++) {
                const char *end = strchrnul(p, ':');
                int n = snprintf(buf, sizeof(buf), "%.*s/%s", (int)(end - p), p, name);
                if (end > p && n > 0 && (size_t)n < sizeof(buf) && access(buf, X_OK) == 0)
                        return true;
                if (!*end)
                        return false;
                p = end;
        }
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
        safe_close(k->req_fd);
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
int code_kernel_send(struct code_kernel *k, const void *buf, size_t len)
{
        const char *p = buf;

        if (k->req_fd < 0)
                return write_full(code_kernel_request_fd(k), buf, len);
        /* The agent holds the request FIFO's read end too, so a dead kernel never makes a
         * write fail: a full FIFO waits for the kernel or its end. */
        while (len > 0) {
                ssize_t n = write(k->req_fd, p, len);
                if (n > 0) {
                        p += n;
                        len -= (size_t)n;
                        continue;
                }
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return negative_errno();
                struct pollfd f[2] = {{.fd = k->req_fd, .events = POLLOUT},
                                      {.fd = k->pidfd, .events = POLLIN}};
                if (poll(f, 2, -1) < 0 && errno != EINTR)
                        return negative_errno();
                if (f[1].revents)
                        return -ECHILD;
        }
        return 0;
}

/* A fresh name in CODE_SOCKET_DIR, which is made here if missing and must be ours. */
static int rendezvous_name(char out[static 108], const char *suffix)
{
        char hex[17];
        struct stat st;

        if (mkdir(CODE_SOCKET_DIR, 0711) < 0 && errno != EEXIST)
                return negative_errno();
        if (lstat(CODE_SOCKET_DIR, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
                return -EPERM;
        if (random_hex(hex, 8) < 0)
                return -EIO;
        snprintf(out, 108, "%s/k-%s%s", CODE_SOCKET_DIR, hex, suffix);
        return 0;
}

static int listen_path(char out[static 108])
{
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int e;

        if (fd < 0)
                return negative_errno();
        e = rendezvous_name(sa.sun_path, ".sock");
        if (e < 0)
                return e;
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return negative_errno();
        if (chmod(sa.sun_path, 0600) < 0 || listen(fd, 4) < 0) {
                e = negative_errno();
                (void)unlink(sa.sun_path);
                return e;
        }
        memcpy(out, sa.sun_path, sizeof(sa.sun_path));
        return TAKE_FD(fd);
}

/* The R kernel's FIFOs, base.in (requests) and base.out (answers), mode 0600 in the root-only
 * CODE_SOCKET_DIR. The agent holds the request FIFO read-write, so that neither side's open
 * blocks and the kernel never reads end-of-file from it, and the answer FIFO read-only and
 * non-blocking, so that it reads end-of-file once the kernel is gone. The caller unlinks both
 * (fifo_unlink) once the kernel is ready or has failed. */
static int make_fifos(struct code_kernel *k, char base[static 108])
{
        char in[116], out[116];
        int e = rendezvous_name(base, "");

        if (e < 0)
                return e;
        snprintf(in, sizeof(in), "%s.in", base);
        snprintf(out, sizeof(out), "%s.out", base);
        if (mkfifo(in, 0600) < 0)
                return negative_errno();
        if (mkfifo(out, 0600) < 0) {
                e = negative_errno();
                (void)unlink(in);
                return e;
        }
        k->req_fd = open(in, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        k->sock = open(out, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        return k->req_fd < 0 || k->sock < 0 ? -EIO : 0;
}

static void fifo_unlink(const char *base)
{
        char p[116];

        snprintf(p, sizeof(p), "%s.in", base);
        (void)unlink(p);
        snprintf(p, sizeof(p), "%s.out", base);
        (void)unlink(p);
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
                struct pollfd p[2] = {{.fd = fd, .events = POLLIN},
                                      {.fd = k->pidfd, .events = POLLIN}};
                int64_t left = deadline - now_ms();
                size_t start, end;
                unsigned seq;
                int status;
                ssize_t n;

                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(p, 2, (int)left) < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                /* Gone before it was ready (a FIFO it never opened would not say so). */
                if (!p[0].revents && p[1].revents)
                        return -ECHILD;
                if (!p[0].revents)
                        continue;
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

/* A kernel's command line (argv points into it and at its row's literals). */
struct kernel_cmd {
        const char *argv[4 + CODE_LANG_MAX_ARGS + 1];
        char *program; /* the kernel program's path */
};

static void kernel_cmd_done(struct kernel_cmd *c)
{
        free(c->program);
}

/* -ENOENT when the interpreter or the kernel program is missing (a template without R). */
static int kernel_cmd(const struct code_language *lang, struct kernel_cmd *c)
{
        size_t n = 0;

        c->program = program_path(lang);
        if (!c->program)
                return -ENOMEM;
        if (!in_path(lang->interpreter) || access(c->program, R_OK) < 0)
                return -ENOENT;
        /* A shell sets the umask and execs the kernel (same pid), code-kernel.h. */
        c->argv[n++] = "/bin/sh";
        c->argv[n++] = "-c";
        c->argv[n++] = "umask " CODE_KERNEL_UMASK " && exec \"$0\" \"$@\"";
        c->argv[n++] = lang->interpreter;
        for (size_t i = 0; i < CODE_LANG_MAX_ARGS && lang->args[i]; i++)
                c->argv[n++] =
                    strcmp(lang->args[i], CODE_ARG_PROGRAM) == 0 ? c->program : lang->args[i];
        return 0;
}

/* rendezvous: the socket path, the FIFOs' base name, or NULL (bash). */
static int spawn_kernel(struct code_kernel *k, const char *cwd, bool preload,
                        const char *rendezvous)
{
        _cleanup_free_ char *var = NULL, *preload_var = NULL;
        _cleanup_strv_free_ char **env = NULL;
        struct kernel_cmd cmd = {0};
        struct agent_user u = {0};
        struct agent_spawned sp;
        const char *extra[4] = {0};
        size_t ne = 0;
        int e;

        e = kernel_cmd(k->lang, &cmd);
        if (e >= 0)
                e = kernel_user(&u);
        if (e < 0) {
                kernel_cmd_done(&cmd);
                return e;
        }
        switch (k->lang->transport) {
        case CODE_TRANSPORT_SOCKET:
                e = asprintf(&var, "SBX_KERNEL_SOCKET=%s", rendezvous);
                break;
        case CODE_TRANSPORT_FIFO:
                e = asprintf(&var, "SBX_KERNEL_FIFO=%s", rendezvous);
                break;
        case CODE_TRANSPORT_SHELL:
                e = asprintf(&var, "SBX_KERNEL_NONCE=%s", k->nonce);
                break;
        }
        if (e < 0)
                var = NULL;
        extra[ne++] = var;
        if (preload && code_kernel_preload(k->lang) &&
            asprintf(&preload_var, "SBX_KERNEL_PRELOAD=%s", k->lang->preload) >= 0)
                extra[ne++] = preload_var;
        e = var ? kernel_env(&u, extra, &env, &k->genv) : -ENOMEM;
        if (e >= 0) {
                struct agent_spawn s = {.argv = cmd.argv,
                                        .envp = (const char *const *)env,
                                        .cwd = cwd,
                                        .user = &u,
                                        .stdin_pipe = k->lang->transport == CODE_TRANSPORT_SHELL};
                e = agent_spawn(&s, &sp);
        }
        agent_user_done(&u);
        kernel_cmd_done(&cmd);
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

        if (k->lang->transport == CODE_TRANSPORT_SHELL && k->rbuf.len) {
                n = (ssize_t)MIN(k->rbuf.len, sizeof(buf) - 1);
                memcpy(buf, k->rbuf.p, (size_t)n);
        }
        buf[n > 0 ? n : 0] = '\0';
        log_warning_errno(e, "%s kernel did not start: %m%s%s", k->lang->name, n > 0 ? ": " : "",
                          buf);
}

int code_kernel_start(const struct code_language *lang, const char *cwd, bool preload,
                      int timeout_ms, struct code_kernel **ret)
{
        _cleanup_close_ int lfd = -EBADF;
        char name[108] = "";
        int64_t deadline = now_ms() + timeout_ms;
        struct code_kernel *k;
        enum code_transport t = lang->transport;
        int e = 0;

        k = calloc(1, sizeof(*k));
        if (!k)
                return -ENOMEM;
        *k = (struct code_kernel){.lang = lang,
                                  .pidfd = -EBADF,
                                  .sock = -EBADF,
                                  .req_fd = -EBADF,
                                  .in_fd = -EBADF,
                                  .out_fd = -EBADF,
                                  .err_fd = -EBADF};
        switch (t) {
        case CODE_TRANSPORT_SHELL:
                e = random_hex(k->nonce, 16);
                break;
        case CODE_TRANSPORT_SOCKET:
                e = lfd = listen_path(name);
                break;
        case CODE_TRANSPORT_FIFO:
                e = make_fifos(k, name);
                break;
        }
        if (e >= 0)
                e = spawn_kernel(k, cwd, preload, name);
        if (e >= 0 && t == CODE_TRANSPORT_SOCKET) {
                e = accept_kernel(lfd, k, deadline);
                if (e >= 0)
                        k->sock = e;
        }
        if (t == CODE_TRANSPORT_SOCKET && name[0])
                (void)unlink(name);
        if (e >= 0)
                e = wait_ready(k, deadline);
        /* The kernel opened its FIFOs before it said it was ready. */
        if (t == CODE_TRANSPORT_FIFO && name[0])
                fifo_unlink(name);
        if (e < 0) {
                if (e != -ENOENT)
                        log_start_failure(k, e);
                code_kernel_free(k);
                return e;
        }
        *ret = k;
        return 0;
}
