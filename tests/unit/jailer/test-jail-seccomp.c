/* SPDX-License-Identifier: Apache-2.0 */
/* The seccomp programs build, and behave: loaded in a forked child (the parent stays clean),
 * denied calls fail with EPERM/ENOSYS and allowed ones still work. */
#include "jail-seccomp.h"
#include "macros.h"
#include "unit.h"

#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int expect_errno(long r, int e)
{
        return r == -1 && errno == e;
}

/* Runs in the child after loading; returns the number of failed expectations. */
static int probe(void)
{
        int bad = 0;
#define EXPECT(cond)                                                                               \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "line %d: expected %s (errno %d)\n", __LINE__, #cond,      \
                                errno);                                                            \
                        bad++;                                                                     \
                }                                                                                  \
        } while (0)
        EXPECT(expect_errno(syscall(SYS_keyctl, 0, 0, 0), EPERM));
        EXPECT(expect_errno(syscall(SYS_bpf, 0, NULL, 0), EPERM));
        EXPECT(expect_errno(syscall(SYS_unshare, CLONE_NEWUSER), EPERM));
        EXPECT(expect_errno(syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0), EPERM));
        EXPECT(expect_errno(syscall(SYS_clone3, NULL, 0), ENOSYS));
        EXPECT(expect_errno(syscall(SYS_io_uring_setup, 1, NULL), EPERM));
        EXPECT(expect_errno(syscall(SYS_personality, 0x0040000), EPERM));
        EXPECT(syscall(SYS_personality, 0xffffffffUL) >= 0);
        EXPECT(expect_errno(syscall(SYS_socket, AF_PACKET, SOCK_RAW, 0), EPERM));
        EXPECT(expect_errno(syscall(SYS_socket, 40 /* AF_VSOCK */, SOCK_STREAM, 0), EPERM));
        EXPECT(expect_errno(syscall(SYS_socket, AF_INET, SOCK_RAW | SOCK_CLOEXEC, 1), EPERM));
        /* not NETLINK_ROUTE: refused as a kernel without the family would (libaudit: no audit) */
        EXPECT(expect_errno(syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 9), EPROTONOSUPPORT));
        EXPECT(expect_errno(syscall(SYS_socket, AF_NETLINK, SOCK_RAW, 15), EPROTONOSUPPORT));
        /* upper bits of a 32-bit argument must not smuggle a family past the filter */
        EXPECT(expect_errno(syscall(SYS_socket, 0x100000000UL | AF_PACKET, SOCK_RAW, 0), EPERM));
        char c = 'x';
        EXPECT(expect_errno(syscall(SYS_ioctl, 0, 0x100000000UL | TIOCSTI, &c), EPERM));
        EXPECT(expect_errno(syscall(0x40000000L | SYS_getpid), ENOSYS));
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
        EXPECT(r == -ENOSYS);
        /* still allowed */
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        EXPECT(s >= 0);
        int n = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
        EXPECT(n >= 0);
        int i = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        EXPECT(i >= 0);
        pid_t p = fork();
        if (p == 0)
                _exit(7);
        int st = 0;
        EXPECT(p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7);
        EXPECT(syscall(SYS_personality, 0) >= 0);
        return bad;
}

int main(void)
{
        struct jail_seccomp f = {0};
        CHECK_EQ_INT(jail_seccomp_compile(&f), 0);
        CHECK(f.main.len > 10);
        CHECK(f.extra.len > 10);

        pid_t pid = fork();
        if (pid == 0) {
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || jail_seccomp_load(&f) < 0)
                        _exit(255);
                _exit(MIN(probe(), 250));
        }
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status));
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
                fprintf(stderr, "probe failures: %d\n", WEXITSTATUS(status));
        CHECK_EQ_INT(WEXITSTATUS(status), 0);
        jail_seccomp_done(&f);
        return unit_finish("test-jail-seccomp");
}
