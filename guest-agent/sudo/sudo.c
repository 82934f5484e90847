/* SPDX-License-Identifier: Apache-2.0 */
/* sudo's agent side: the listener on "sbx-sudo" and one session per connection (sudo/sudo.h). */
#include "sudo/sudo.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "core/provision.h"
#include "core/spawn.h"
#include "core/users.h"
#include "format-util.h"
#include "log.h"
#include "thread-util.h"
#include "macros.h"
#include "proc/process-env.h"
#include "time-util.h"

#define ERR_MAX 512

/* A running sudo command: found by the reaper hook by pid. */
struct session {
        struct session *next;
        pid_t pid;
        int efd; /* written when it exited */
        bool exited;
        int code, status;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct session *sessions;
static unsigned n_conns; /* connections being served, sessions or not */

/* The client's list (templates/base/sbx-sudo.c); anything else is ignored. */
static bool forwardable(int sig)
{
        return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT ||
               sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGWINCH;
}

/* Call with lock held: the group, or the leader alone while it has not reached setsid() yet
 * (once is enough: a trap would run twice). */
static void kill_locked(struct session *s, int sig)
{
        if (s->exited)
                return;
        if (kill(-s->pid, sig) < 0 && errno == ESRCH)
                (void)kill(s->pid, sig);
}

void agent_sudo_on_exit(pid_t pid, int code, int status)
{
        pthread_mutex_lock(&lock);
        for (struct session *s = sessions; s; s = s->next)
                if (s->pid == pid && !s->exited) {
                        s->exited = true;
                        s->code = code;
                        s->status = status;
                        (void)eventfd_write(s->efd, 1);
                        break;
                }
        pthread_mutex_unlock(&lock);
}

void agent_sudo_signal_all(int sig)
{
        pthread_mutex_lock(&lock);
        for (struct session *s = sessions; s; s = s->next)
                kill_locked(s, sig);
        pthread_mutex_unlock(&lock);
}

/* ---- talking to the client ---- */

/* Answers never block: a client that does not read them loses them. */
static void answer(int c, char kind, const void *body, size_t len)
{
        char buf[1 + 2 + ERR_MAX];
        buf[0] = kind;
        memcpy(buf + 1, body, MIN(len, sizeof(buf) - 1));
        (void)!send(c, buf, 1 + MIN(len, sizeof(buf) - 1), MSG_NOSIGNAL | MSG_DONTWAIT);
}

static void answer_error(int c, const char *fmt, ...) _printf_(2, 3);
static void answer_error(int c, const char *fmt, ...)
{
        char msg[2 + ERR_MAX];
        int n = FORMAT_VARARGS(msg + 2, ERR_MAX, fmt);
        size_t len = n < 0 ? 0 : MIN((size_t)n, (size_t)ERR_MAX - 1);
        msg[0] = (char)(len & 0xff);
        msg[1] = (char)(len >> 8);
        answer(c, 'E', msg, 2 + len);
}

static void answer_status(int c, char kind, int32_t v)
{
        unsigned char b[4] = {(unsigned char)(v & 0xff), (unsigned char)((v >> 8) & 0xff),
                              (unsigned char)((v >> 16) & 0xff),
                              (unsigned char)(((uint32_t)v >> 24) & 0xff)};
        answer(c, kind, b, sizeof(b));
}

/* Keep the fds of an SCM_RIGHTS message: the first AGENT_SUDO_FDS of the request, in one
 * message; any other is closed and makes the request bad. */
static void take_fds(struct msghdr *m, int fds[AGENT_SUDO_FDS], int *n_fds, bool *bad)
{
        if (m->msg_flags & MSG_CTRUNC)
                *bad = true;
        for (struct cmsghdr *h = CMSG_FIRSTHDR(m); h; h = CMSG_NXTHDR(m, h)) {
                if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
                        continue;
                size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                const unsigned char *d = CMSG_DATA(h);
                bool keep = *n_fds == 0 && n == AGENT_SUDO_FDS;
                for (size_t i = 0; i < n; i++) {
                        int fd;
                        memcpy(&fd, d + i * sizeof(int), sizeof(int));
                        if (keep)
                                fds[(*n_fds)++] = fd;
                        else
                                close(fd);
                }
                if (!keep)
                        *bad = true;
        }
}

/* Read exactly len bytes before deadline (CLOCK_MONOTONIC ms), taking fds as they come when
 * fds is given. -ETIMEDOUT, -ECONNRESET (the client left), -errno. */
static int recv_full(int c, void *buf, size_t len, int64_t deadline, int fds[AGENT_SUDO_FDS],
                     int *n_fds, bool *bad_fds)
{
        for (size_t got = 0; got < len;) {
                int64_t left = deadline - now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                struct pollfd p = {c, POLLIN, 0};
                int k = poll(&p, 1, (int)MIN(left, 1000));
                if (k < 0 && errno != EINTR)
                        return -errno;
                if (k <= 0)
                        continue;
                union {
                        char b[CMSG_SPACE(sizeof(int) * AGENT_SUDO_FDS)];
                        struct cmsghdr align;
                } u;
                struct iovec iov = {(char *)buf + got, len - got};
                struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
                if (fds) {
                        m.msg_control = u.b;
                        m.msg_controllen = sizeof(u.b);
                }
                ssize_t n = recvmsg(c, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -ECONNRESET;
                if (fds)
                        take_fds(&m, fds, n_fds, bad_fds);
                got += (size_t)n;
        }
        return 0;
}

/* ---- one connection ---- */

struct conn {
        int c;
        int fds[AGENT_SUDO_FDS];
        int n_fds;
        char *body;
        struct agent_sudo_request req;
        struct agent_user caller, target;
        bool have_caller, have_target;
        char **argv, **env, **envp;
        bool ran; /* the command was started, or the caller refused: no lingering */
};

static void conn_done(struct conn *k)
{
        for (int i = 0; i < k->n_fds; i++)
                safe_close(k->fds[i]);
        agent_sudo_request_done(&k->req);
        free(k->body);
        if (k->have_caller)
                agent_user_done(&k->caller);
        if (k->have_target)
                agent_user_done(&k->target);
        strv_free(k->argv);
        strv_free(k->env);
        strv_free(k->envp);
        safe_close(k->c);
}

/* At most a line a second about refused callers (a refused process may loop). */
static void log_refused(const struct ucred *cr)
{
        static int64_t last;
        int64_t now = now_ms(), prev = __atomic_load_n(&last, __ATOMIC_RELAXED);
        if (now - prev >= 1000 && __atomic_compare_exchange_n(&last, &prev, now, false,
                                                              __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                log_info("sudo: refused uid %u (pid %d)", (unsigned)cr->uid, (int)cr->pid);
}

/* Who is asking on c: the default user or root, as *caller (free with agent_user_done);
 * -EPERM otherwise, answered. */
static int check_peer(int c, struct agent_user *caller)
{
        _cleanup_free_ char *name = NULL;
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        int r;

        if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
                return -errno;
        if (cr.pid <= 0) { /* not in this sandbox's pid namespace */
                answer_error(c, "the caller is not in this sandbox");
                log_refused(&cr);
                return -EPERM;
        }
        r = agent_config_default_user(&name);
        if (r < 0)
                return r;
        r = agent_user_lookup(cr.uid == 0 ? "root" : name, caller);
        if (r < 0 && cr.uid == 0) {
                /* root without a passwd line still is root */
                *caller = (struct agent_user){
                    .name = strdup("root"), .home = strdup("/root"), .shell = strdup("/bin/sh")};
                if (!caller->name || !caller->home || !caller->shell) {
                        agent_user_done(caller);
                        return -ENOMEM;
                }
                r = 0;
        }
        if (r == 0 && caller->uid != cr.uid) {
                agent_user_done(caller);
                r = -EPERM;
        }
        /* E2B's build gives "user" passwordless sudo in every template, whoever the default
         * user is (a build step's is root): core/provision.h */
        if (r == -EPERM || (r < 0 && cr.uid != 0)) {
                r = agent_user_lookup(PROVISION_USER, caller);
                if (r == 0 && caller->uid != cr.uid) {
                        agent_user_done(caller);
                        r = -EPERM;
                }
        }
        if (r < 0) {
                answer_error(c,
                             "uid %u may not use sudo in this sandbox (only the default user, "
                             "%s, " PROVISION_USER " and root may)",
                             (unsigned)cr.uid, name);
                log_refused(&cr);
                return -EPERM;
        }
        return 0;
}

/* Read and check the request; -errno, answered when it is the client's fault. */
static int read_request(struct conn *k)
{
        int64_t deadline = now_ms() + AGENT_SUDO_REQUEST_MS;
        unsigned char head[AGENT_SUDO_HEAD];
        char err[ERR_MAX];
        bool bad_fds = false;
        struct stat st;
        int r;

        r = recv_full(k->c, head, sizeof(head), deadline, k->fds, &k->n_fds, &bad_fds);
        if (r < 0) {
                if (r == -ETIMEDOUT)
                        answer_error(k->c, "the request took too long");
                return r;
        }
        if (memcmp(head, AGENT_SUDO_MAGIC, 8) != 0) {
                answer_error(k->c, "not a sudo request (this sandbox's sudo speaks %s)",
                             AGENT_SUDO_MAGIC);
                return -EPROTO;
        }
        uint32_t len = (uint32_t)head[8] | (uint32_t)head[9] << 8 | (uint32_t)head[10] << 16 |
                       (uint32_t)head[11] << 24;
        if (len > AGENT_SUDO_MAX_REQUEST) {
                answer_error(k->c, "request too large (%u bytes; at most %u)", len,
                             AGENT_SUDO_MAX_REQUEST);
                return -EMSGSIZE;
        }
        if (bad_fds || k->n_fds != AGENT_SUDO_FDS) {
                answer_error(k->c,
                             "malformed request (it must pass exactly %d fds: stdin, "
                             "stdout, stderr, cwd)",
                             AGENT_SUDO_FDS);
                return -EPROTO;
        }
        if (fstat(k->fds[3], &st) < 0 || !S_ISDIR(st.st_mode)) {
                answer_error(k->c, "malformed request (the working directory is not a directory)");
                return -EPROTO;
        }
        k->body = malloc(len ? len : 1);
        if (!k->body)
                return -ENOMEM;
        r = recv_full(k->c, k->body, len, deadline, NULL, NULL, NULL);
        if (r < 0) {
                if (r == -ETIMEDOUT)
                        answer_error(k->c, "the request took too long");
                return r;
        }
        r = agent_sudo_request_parse(k->body, len, &k->req, err, sizeof(err));
        if (r == -EINVAL)
                answer_error(k->c, "%s", err);
        return r;
}

/* Env list -> envd's environment for the target. */
static int build_env(struct conn *k)
{
        cJSON *o = cJSON_CreateObject();
        int r = o ? 0 : -ENOMEM;
        for (char **e = k->env; !r && *e; e++) {
                char *eq = strchr(*e, '=');
                *eq = '\0';
                if (!cJSON_AddStringToObject(o, *e, eq + 1))
                        r = -ENOMEM;
                *eq = '=';
        }
        if (!r)
                r = agent_process_build_env(&k->target, o, &k->envp);
        cJSON_Delete(o);
        return r;
}

/* Run the command and relay signals until it ends; the answer says how. */
static int run(struct conn *k)
{
        struct session s = {.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
        struct agent_spawned sp;
        bool gone = false;
        int r;

        if (s.efd < 0)
                return -errno;
        /* -i enters the target's home as the target (chdir by path in the child); otherwise
         * the caller's working directory. */
        int fds[AGENT_SUDO_FDS] = {k->fds[0], k->fds[1], k->fds[2], k->req.login ? -1 : k->fds[3]};
        struct agent_spawn spec = {
            .argv = (const char *const *)k->argv,
            .envp = (const char *const *)k->envp,
            .cwd = k->target.home,
            .user = &k->target,
            .fds = fds,
        };
        pthread_mutex_lock(&lock);
        r = agent_spawn(&spec, &sp);
        if (r == 0) {
                s.pid = sp.pid;
                s.next = sessions;
                sessions = &s;
        }
        pthread_mutex_unlock(&lock);
        if (r < 0) {
                close(s.efd);
                answer_error(k->c, "cannot start the command: %s", strerror(-r));
                return r;
        }
        k->ran = true;
        /* The command has its copies. */
        for (int i = 0; i < k->n_fds; i++)
                k->fds[i] = safe_close(k->fds[i]);
        k->n_fds = 0;

        for (;;) {
                struct pollfd p[2] = {{s.efd, POLLIN, 0}, {gone ? -1 : k->c, POLLIN, 0}};
                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        break; /* cannot happen with valid fds; the reaper still sees it */
                if (p[0].revents & POLLIN)
                        break;
                if (!(p[1].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                unsigned char b[64];
                ssize_t n = recv(k->c, b, sizeof(b), MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                pthread_mutex_lock(&lock);
                if (n <= 0) {
                        /* The client went away (killed, its connection closed): so does the
                         * command, as envd kills a command whose client is killed. */
                        gone = true;
                        kill_locked(&s, SIGKILL);
                } else {
                        for (ssize_t i = 0; i < n; i++)
                                if (forwardable(b[i]))
                                        kill_locked(&s, b[i]);
                }
                pthread_mutex_unlock(&lock);
        }

        pthread_mutex_lock(&lock);
        for (struct session **pp = &sessions; *pp; pp = &(*pp)->next)
                if (*pp == &s) {
                        *pp = s.next;
                        break;
                }
        bool exited = s.exited;
        int code = s.code, status = s.status;
        pthread_mutex_unlock(&lock);
        close(s.efd);
        if (!exited)
                return -EIO;
        if (!gone) {
                if (code == CLD_EXITED)
                        answer_status(k->c, 'X', status);
                else
                        answer_status(k->c, 'K', status);
        }
        return 0;
}

static int serve(struct conn *k)
{
        /* Again (the listener checked already): the default user may have changed since. */
        int r = check_peer(k->c, &k->caller);
        if (r < 0) {
                k->ran = true; /* answered; nothing to linger for */
                return r;
        }
        k->have_caller = true;
        r = read_request(k);
        if (r < 0)
                return r;
        r = agent_user_lookup(k->req.user, &k->target);
        if (r == -ENOENT) {
                answer_error(k->c, "unknown user %s", k->req.user);
                return r;
        }
        if (r < 0) {
                answer_error(k->c, "looking up %s: %s", k->req.user, strerror(-r));
                return r;
        }
        k->have_target = true;
        r = agent_sudo_command(&k->req, &k->target, &k->caller, &k->argv, &k->env);
        if (r == -EINVAL) {
                answer_error(k->c, "no command given (only VAR=value words)");
                return r;
        }
        if (r == 0)
                r = build_env(k);
        if (r < 0) {
                answer_error(k->c, "%s", strerror(-r));
                return r;
        }
        log_debug("sudo: %s runs %s as %s", k->caller.name, k->argv[0], k->target.name);
        return run(k);
}

/* After a refusal: let the client finish sending (discarding it, for at most
 * AGENT_SUDO_LINGER_MS) so that it reads the answer; closing with its bytes unread would reset
 * the connection and lose the answer. */
static void linger(int c)
{
        int64_t deadline = now_ms() + AGENT_SUDO_LINGER_MS;
        size_t left = AGENT_SUDO_HEAD + AGENT_SUDO_MAX_REQUEST;
        char buf[4096];

        (void)shutdown(c, SHUT_WR);
        while (left > 0) {
                int64_t ms = deadline - now_ms();
                struct pollfd p = {c, POLLIN, 0};
                if (ms <= 0 || poll(&p, 1, (int)ms) <= 0)
                        return;
                ssize_t n = recv(c, buf, MIN(sizeof(buf), left), MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                        return;
                if (n > 0)
                        left -= (size_t)n;
        }
}

static void *session_main(void *arg)
{
        struct conn k = {.c = (int)(intptr_t)arg};
        if (serve(&k) < 0 && !k.ran)
                linger(k.c);
        conn_done(&k);
        __atomic_sub_fetch(&n_conns, 1, __ATOMIC_RELAXED);
        return NULL;
}

static void *listener(void *arg)
{
        int l = (int)(intptr_t)arg;
        for (;;) {
                int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
                if (c < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOMEM ||
                            errno == ENOBUFS)
                                usleep(100 * 1000); /* wait for fds or memory to come back */
                        continue;
                }
                /* Refused callers never take a session: they cannot crowd out those who may. The
                 * answer waits in their receive queue (the client reads it even when its send
                 * fails on the closed connection). */
                struct agent_user who;
                if (check_peer(c, &who) < 0) {
                        close(c);
                        continue;
                }
                agent_user_done(&who);
                if (__atomic_add_fetch(&n_conns, 1, __ATOMIC_RELAXED) > AGENT_SUDO_MAX_SESSIONS) {
                        __atomic_sub_fetch(&n_conns, 1, __ATOMIC_RELAXED);
                        /* (no linger here: the listener must not wait for anyone) */
                        answer_error(c, "too many sudo commands at once (at most %u)",
                                     AGENT_SUDO_MAX_SESSIONS);
                        close(c);
                        continue;
                }
                int r = thread_start_detached(session_main, (void *)(intptr_t)c, 256 * 1024);
                if (r < 0) {
                        __atomic_sub_fetch(&n_conns, 1, __ATOMIC_RELAXED);
                        answer_error(c, "cannot serve sudo now: %s", strerror(-r));
                        close(c);
                }
        }
        return NULL;
}

int agent_sudo_start(void)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        socklen_t len =
            (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(AGENT_SUDO_SOCKET));
        _cleanup_close_ int fd = -EBADF;

        if (getpid() != 1) {
                log_info("sudo: not PID 1 of a sandbox, no sudo socket");
                return 0;
        }
        memcpy(a.sun_path + 1, AGENT_SUDO_SOCKET, strlen(AGENT_SUDO_SOCKET));
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return log_error_errno(errno, "sudo socket: %m");
        if (bind(fd, (struct sockaddr *)&a, len) < 0 || listen(fd, 16) < 0)
                return log_error_errno(errno, "sudo socket @%s: %m", AGENT_SUDO_SOCKET);
        /* Its threads take no signals: PID 1 reads them from its signalfd. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        pthread_t t;
        int r = pthread_create(&t, NULL, listener, (void *)(intptr_t)fd);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r != 0)
                return log_error_errno(r, "sudo thread: %m");
        TAKE_FD(fd);
        pthread_detach(t);
        return 0;
}
