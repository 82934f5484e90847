/* SPDX-License-Identifier: Apache-2.0 */
#include "proc/privsep.h"

#include <errno.h>
#include <grp.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "macros.h"

int egress_privsep_limits(void)
{
        static const struct {
                int what;
                rlim_t value;
        } limits[] = {
            {RLIMIT_NOFILE, EGRESS_NOFILE}, {RLIMIT_NPROC, EGRESS_NPROC}, {RLIMIT_CORE, 0}};
        for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
                struct rlimit l = {limits[i].value, limits[i].value};
                if (setrlimit(limits[i].what, &l) < 0)
                        return -errno;
        }
        return 0;
}

static void cap_freep(cap_t *c)
{
        if (*c)
                cap_free(*c);
}

int egress_privsep_drop(uid_t uid, gid_t gid)
{
        if (uid == 0 || gid == 0)
                return -EINVAL;
        /* the bounding set first: it needs CAP_SETPCAP, which setresuid takes away */
        int last = (int)cap_max_bits() - 1;
        for (cap_value_t c = 0; c <= last; c++)
                if (cap_drop_bound(c) < 0 && errno != EINVAL)
                        return -errno;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
                return -errno;
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                return -errno;
        __attribute__((cleanup(cap_freep))) cap_t none = cap_init();
        if (!none || cap_set_proc(none) < 0)
                return -errno;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return -errno;
        /* and back is impossible: a check, not a hope */
        if (setresuid(0, 0, 0) == 0 || geteuid() != uid)
                return -EPERM;
        return 0;
}

/* Allowed whatever their arguments. */
static const int allowed[] = {
    /* files and descriptors: the CA bundle, NSS and resolv.conf, stderr */
    SCMP_SYS(read),
    SCMP_SYS(write),
    SCMP_SYS(readv),
    SCMP_SYS(writev),
    SCMP_SYS(pread64),
    SCMP_SYS(close),
    SCMP_SYS(lseek),
    SCMP_SYS(fstat),
    SCMP_SYS(newfstatat),
    SCMP_SYS(statx),
    SCMP_SYS(openat),
    SCMP_SYS(getdents64),
    SCMP_SYS(fcntl),
    SCMP_SYS(dup),
    SCMP_SYS(access),
    SCMP_SYS(faccessat),
    SCMP_SYS(faccessat2),
    SCMP_SYS(readlink),
    SCMP_SYS(uname),
    /* memory */
    SCMP_SYS(mmap),
    SCMP_SYS(munmap),
    SCMP_SYS(mprotect),
    SCMP_SYS(mremap),
    SCMP_SYS(brk),
    SCMP_SYS(madvise),
    /* threads, time, signals to itself */
    SCMP_SYS(futex),
    SCMP_SYS(set_robust_list),
    SCMP_SYS(get_robust_list),
    SCMP_SYS(rseq),
    SCMP_SYS(set_tid_address),
    SCMP_SYS(sched_yield),
    SCMP_SYS(sched_getaffinity),
    SCMP_SYS(gettid),
    SCMP_SYS(getpid),
    SCMP_SYS(getppid),
    SCMP_SYS(getuid),
    SCMP_SYS(geteuid),
    SCMP_SYS(getgid),
    SCMP_SYS(getegid),
    SCMP_SYS(prlimit64),
    SCMP_SYS(getrlimit),
    SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigaction),
    SCMP_SYS(rt_sigreturn),
    SCMP_SYS(sigaltstack),
    SCMP_SYS(nanosleep),
    SCMP_SYS(clock_nanosleep),
    SCMP_SYS(clock_gettime),
    SCMP_SYS(gettimeofday),
    SCMP_SYS(getrandom),
    SCMP_SYS(exit),
    SCMP_SYS(exit_group),
    /* a poll or a sleep stopped and continued (SIGSTOP, a debugger) goes on through it */
    SCMP_SYS(restart_syscall),
    /* polling and waking */
    SCMP_SYS(poll),
    SCMP_SYS(ppoll),
    SCMP_SYS(eventfd2),
    /* the sockets it was handed and the ones it opens upstream */
    SCMP_SYS(connect),
    SCMP_SYS(accept4),
    SCMP_SYS(sendto),
    SCMP_SYS(recvfrom),
    SCMP_SYS(sendmsg),
    SCMP_SYS(recvmsg),
    SCMP_SYS(sendmmsg),
    SCMP_SYS(recvmmsg),
    SCMP_SYS(setsockopt),
    SCMP_SYS(getsockopt),
    SCMP_SYS(getsockname),
    SCMP_SYS(getpeername),
    SCMP_SYS(shutdown),
};

static void ctx_freep(scmp_filter_ctx *c)
{
        if (*c)
                seccomp_release(*c);
}

int egress_privsep_seccomp(void)
{
        __attribute__((cleanup(ctx_freep))) scmp_filter_ctx ctx =
            seccomp_init(SCMP_ACT_ERRNO(EPERM));
        if (!ctx)
                return -ENOMEM;
        /* a binary tree of syscall numbers: every read and write of the proxies passes
         * it. Only the filter's speed, not what it allows, so a libseccomp without the
         * attribute keeps the linear filter rather than failing the start. */
        (void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);
        int r = 0;
        for (size_t i = 0; i < ELEMENTSOF(allowed) && r >= 0; i++)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allowed[i], 0);
        /* sockets of the internet families only (no netlink, no packet sockets, no unix) */
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                                     SCMP_A0(SCMP_CMP_EQ, AF_INET, 0));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
                                     SCMP_A0(SCMP_CMP_EQ, AF_INET6, 0));
        /* threads, never processes or namespaces */
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        /* a terminal question on stderr (stdio's buffering) */
        if (r >= 0)
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
                                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, TCGETS));
        if (r >= 0)
                r = seccomp_load(ctx);
        return r;
}
