/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sudo for sbx sandboxes: asks the sandbox's agent to run a command as root.
 *
 * Inside a sandbox every process has no_new_privs, so a set-uid sudo cannot raise anything.
 * This sudo instead connects to the agent's sudo socket (the abstract unix socket "sbx-sudo",
 * private to the sandbox's network namespace; the agent's side is guest-agent/sudo/sudo.c),
 * checks that PID 1 (the agent, as root) is what answers, and sends the command, its
 * environment, its stdin/stdout/stderr and working directory (as file descriptors). The agent
 * checks the caller's credentials from the socket (SO_PEERCRED: only the sandbox's default
 * user, or root, may), runs the command as root (or -u USER) with the capabilities every root
 * process of a sandbox holds (root's file and user capabilities of the sandbox's own user
 * namespace; another user none), and answers with how it ended. Signals this process gets (SIGINT
 * from a terminal, SIGTERM, SIGHUP, ...) are forwarded to the command; if this process dies,
 * the command is killed. The exit status is the command's; 1 for sudo's own errors (printed
 * as "sudo: ..."). No password is ever asked.
 *
 * Wire format (also in guest-agent/sudo/sudo.h): "SBXSUDO1", a 32-bit little-endian length,
 * then that many bytes of NUL-terminated fields "u=USER", "f=FLAGS" (E: keep the environment,
 * i: login shell, s: shell), "a=ARG" (argv, in order), "e=NAME=VALUE" (the environment), with
 * SCM_RIGHTS fds stdin, stdout, stderr and the cwd on the first bytes. Then the client sends
 * one byte per signal to forward; the agent sends "X" + a 32-bit exit code, "K" + a 32-bit
 * signal number, or "E" + a 16-bit length + a message.
 *
 * Self-contained (no sbx headers, no library but libc): templates/base/layer.sh compiles it
 * statically with cc into the template's layer (or installs SBX_SUDO_BIN); meson builds a copy
 * too, for its warnings and cppcheck.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_PATH, pipe2, struct ucred */
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define SUDO_SOCKET      "sbx-sudo" /* abstract */
#define SUDO_MAGIC       "SBXSUDO1"
#define SUDO_MAX_REQUEST (1024 * 1024)
#define SUDO_VERSION     "sbx sudo 1 (no password; the sandbox's agent runs the command)"

extern char **environ;

static int sig_pipe[2] = {-1, -1};

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

static void on_signal(int sig)
{
        unsigned char b = (unsigned char)sig;
        int e = errno;
        (void)!write(sig_pipe[1], &b, 1);
        errno = e;
}

__attribute__((format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
        va_list ap;
        fprintf(stderr, "sudo: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return 1;
}

struct req {
        char *buf;
        size_t len, cap;
};

static int add(struct req *r, const char *prefix, const char *value)
{
        size_t need = strlen(prefix) + strlen(value) + 1;
        if (r->len + need > SUDO_MAX_REQUEST)
                return -E2BIG;
        if (r->len + need > r->cap) {
                size_t cap = r->cap ? r->cap * 2 : 4096;
                while (cap < r->len + need)
                        cap *= 2;
                char *n = realloc(r->buf, cap);
                if (!n)
                        return -ENOMEM;
                r->buf = n;
                r->cap = cap;
        }
        r->len += (size_t)sprintf(r->buf + r->len, "%s%s", prefix, value) + 1;
        return 0;
}

static void usage(FILE *f)
{
        fputs("usage: sudo [-EHinsSkKAbPv] [-u user] [--] [VAR=value]... command [arg...]\n"
              "       sudo -i | -s [command]\n"
              "       sudo -l | -v | -k | -K | -V | -h\n"
              "Runs command as root (or -u user) without a password: the sandbox's agent runs "
              "it,\nas every root process of the sandbox, for the sandbox's default user or root "
              "only.\n",
              f);
}

static int connect_agent(void)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        memcpy(a.sun_path + 1, SUDO_SOCKET, strlen(SUDO_SOCKET));
        socklen_t len =
            (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(SUDO_SOCKET));
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&a, len) < 0) {
                int e = -errno;
                close(fd);
                return e;
        }
        /* Only the agent (PID 1, root) may answer: nobody else can have bound the name while
         * it holds it, but check rather than trust. */
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || cr.pid != 1 || cr.uid != 0) {
                close(fd);
                return -EPERM;
        }
        return fd;
}

static int send_request(int fd, const struct req *r)
{
        char head[12];
        uint32_t n = (uint32_t)r->len;
        memcpy(head, SUDO_MAGIC, 8);
        head[8] = (char)(n & 0xff);
        head[9] = (char)((n >> 8) & 0xff);
        head[10] = (char)((n >> 16) & 0xff);
        head[11] = (char)((n >> 24) & 0xff);

        int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cwd < 0)
                cwd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        int fds[4] = {0, 1, 2, cwd};
        for (int i = 0; i < 3; i++)
                if (fcntl(i, F_GETFD) < 0)
                        fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
        union {
                char buf[CMSG_SPACE(sizeof(fds))];
                struct cmsghdr align;
        } u;
        struct iovec iov = {head, sizeof(head)};
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = u.buf,
                           .msg_controllen = sizeof(u.buf)};
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(fds));
        memcpy(CMSG_DATA(c), fds, sizeof(fds));
        ssize_t k = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (cwd >= 0)
                close(cwd);
        if (k != (ssize_t)sizeof(head))
                return -EIO;
        for (size_t off = 0; off < r->len;) {
                k = send(fd, r->buf + off, r->len - off, MSG_NOSIGNAL);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -EIO;
                off += (size_t)k;
        }
        return 0;
}

static int read_full(int fd, void *buf, size_t len)
{
        for (size_t got = 0; got < len;) {
                ssize_t k = read(fd, (char *)buf + got, len - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return -EIO;
                got += (size_t)k;
        }
        return 0;
}

static int32_t le32(const unsigned char *b)
{
        return (int32_t)((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                         (uint32_t)b[3] << 24);
}

/* Forward signals until the agent answers; returns the exit status to use. */
static int wait_answer(int fd)
{
        for (;;) {
                struct pollfd p[2] = {{fd, POLLIN, 0}, {sig_pipe[0], POLLIN, 0}};
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        return fail("poll: %s", strerror(errno));
                }
                if (p[1].revents & POLLIN) {
                        unsigned char b;
                        if (read(sig_pipe[0], &b, 1) == 1)
                                (void)!send(fd, &b, 1, MSG_NOSIGNAL);
                }
                if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                unsigned char t, v[4];
                if (read_full(fd, &t, 1) < 0)
                        return fail("%s", "the sandbox agent went away");
                if (t == 'E') {
                        unsigned char l[2];
                        char msg[65536];
                        if (read_full(fd, l, 2) < 0)
                                return fail("%s", "the sandbox agent went away");
                        size_t n = (size_t)l[0] | (size_t)l[1] << 8;
                        if (read_full(fd, msg, n) < 0)
                                return fail("%s", "the sandbox agent went away");
                        msg[n] = 0;
                        return fail("%s", msg);
                }
                if ((t != 'X' && t != 'K') || read_full(fd, v, 4) < 0)
                        return fail("%s", "unexpected answer from the sandbox agent");
                int32_t n = le32(v);
                if (t == 'X')
                        return n & 0xff;
                /* killed by a signal: die of the same one, as sudo does */
                if (n > 0 && n < 65 && n != SIGKILL && n != SIGSTOP) {
                        signal(n, SIG_DFL);
                        sigset_t s;
                        sigemptyset(&s);
                        sigaddset(&s, n);
                        sigprocmask(SIG_UNBLOCK, &s, NULL);
                        raise(n);
                }
                return 128 + (n & 0x7f);
        }
}

int main(int argc, char **argv)
{
        struct req r = {0};
        const char *user = "root";
        char flags[8] = "";
        int list = 0, i = 1;

        for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
                const char *a = argv[i];
                if (strcmp(a, "--") == 0) {
                        i++;
                        break;
                }
                if (strcmp(a, "--help") == 0) {
                        usage(stdout);
                        return 0;
                }
                if (strcmp(a, "--version") == 0) {
                        puts(SUDO_VERSION);
                        return 0;
                }
                if (strncmp(a, "--user=", 7) == 0) {
                        user = a + 7;
                        continue;
                }
                if (a[1] == '-') {
                        fail("unknown option %s", a);
                        usage(stderr);
                        return 1;
                }
                for (const char *o = a + 1; *o; o++) {
                        switch (*o) {
                        case 'u':
                                if (o[1]) {
                                        user = o + 1;
                                } else if (i + 1 < argc) {
                                        user = argv[++i];
                                } else {
                                        usage(stderr);
                                        return 1;
                                }
                                goto next;
                        case 'E':
                        case 'i':
                        case 's':
                                if (!strchr(flags, *o))
                                        strncat(flags, o, 1);
                                break;
                        case 'l':
                                list = 1;
                                break;
                        case 'V':
                                puts(SUDO_VERSION);
                                return 0;
                        case 'h':
                                usage(stdout);
                                return 0;
                        case 'k':
                        case 'K':
                                if (i + 1 >= argc && !o[1])
                                        return 0; /* no credentials are ever cached */
                                break;
                        case 'v':
                                list = 2;
                                break;
                        case 'n': /* never prompts anyway */
                        case 'H': /* HOME is always the target's */
                        case 'S':
                        case 'A':
                        case 'P':
                        case 'b':
                                break;
                        default: {
                                char opt[2] = {*o, 0};
                                fail("invalid option -- '%s'", opt);
                                usage(stderr);
                                return 1;
                        }
                        }
                }
        next:;
        }
        if (list) {
                /* Ask the agent to run "true": the same check a command would get. */
                i = argc;
        } else if (i >= argc && !strchr(flags, 'i') && !strchr(flags, 's')) {
                usage(stderr);
                return 1;
        }

        int e = 0;
        if (!e)
                e = add(&r, "u=", user);
        if (!e)
                e = add(&r, "f=", flags);
        if (list && !e)
                e = add(&r, "a=", "true");
        for (int k = i; k < argc && !e; k++)
                e = add(&r, "a=", argv[k]);
        for (char **v = environ; v && *v && !e; v++)
                e = add(&r, "e=", *v);
        if (e)
                return fail("%s",
                            e == -E2BIG ? "arguments and environment too large" : "out of memory");

        if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                return fail("pipe: %s", strerror(errno));
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        for (size_t k = 0; k < sizeof(forwarded) / sizeof(forwarded[0]); k++)
                sigaction(forwarded[k], &sa, NULL);
        signal(SIGPIPE, SIG_IGN);

        int fd = connect_agent();
        if (fd == -EPERM)
                return fail("%s", "the sudo socket is not the sandbox agent's");
        if (fd < 0)
                return fail("cannot reach the sandbox agent: %s (sbx sandboxes only)",
                            strerror(-fd));
        if (send_request(fd, &r) < 0) {
                /* The agent may have refused before reading it all: its answer says why. */
                unsigned char t;
                if (recv(fd, &t, 1, MSG_PEEK | MSG_DONTWAIT) == 1)
                        return wait_answer(fd);
                return fail("%s", "sending the request to the sandbox agent failed");
        }
        free(r.buf);
        int st = wait_answer(fd);
        if (list == 1 && st == 0)
                printf("User may run the following commands on this sandbox:\n"
                       "    (ALL : ALL) NOPASSWD: ALL\n");
        return st;
}
