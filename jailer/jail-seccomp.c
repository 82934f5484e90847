/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-seccomp.h"

#include "fd-util.h"
#include "macros.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

/* Denied outright with EPERM. Names unknown to this libseccomp or absent on this arch (vm86,
 * stime, ...) are skipped. Sources: Docker's default profile (docs/escape-battery.md,
 * appendix) and battery group B. */
static const char *const deny_eperm[] = {
    /* B1 keyrings: not namespaced. */
    "keyctl",
    "add_key",
    "request_key",
    /* B2: CVE-rich kernel attack surface. */
    "bpf",
    "perf_event_open",
    "userfaultfd",
    /* B3 mounts; CVE-2022-0185 (fsconfig heap overflow reachable from a userns). */
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "chroot",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "mount_setattr",
    /* B4 cross-process access. */
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "kcmp",
    "pidfd_getfd",
    /* B5 namespaces (clone is argument-filtered below, clone3 gets ENOSYS). */
    "unshare",
    "setns",
    /* B6 modules and kexec. */
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "get_kernel_syms",
    "query_module",
    "kexec_load",
    "kexec_file_load",
    /* B7 "shocker" file-handle escape. */
    "open_by_handle_at",
    "name_to_handle_at",
    /* B8 privileged. */
    "iopl",
    "ioperm",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "quotactl_fd",
    "syslog",
    "nfsservctl",
    "lookup_dcookie",
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "vm86",
    "vm86old",
    /* B9 clocks: not namespaced. */
    "settimeofday",
    "stime",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    /* B10 (personality is in the hand-written filter). */
    "vhangup",
    /* B11 io_uring bypasses per-syscall seccomp (moby/moby PR #46762). */
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    /* NUMA policy (CAP_SYS_NICE in Docker). */
    "mbind",
    "set_mempolicy",
    "get_mempolicy",
    "move_pages",
    "migrate_pages",
    "set_mempolicy_home_node",
    /* C18. */
    "fanotify_init",
};

/* Syscalls newer than libseccomp 2.5.4's table, by number (unified numbering since 5.1,
 * identical on every arch). */
static const int deny_eperm_nr[] = {
    467, /* open_tree_attr (Linux 6.15): open_tree plus mount_setattr */
};

#define CLONE_NEW_MASK                                                                             \
        (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |             \
         CLONE_NEWPID | CLONE_NEWNET)

static void seccomp_releasep(scmp_filter_ctx *ctx)
{
        if (*ctx)
                seccomp_release(*ctx);
}

static int add_arg_rules(scmp_filter_ctx ctx)
{
        const uint32_t eperm = SCMP_ACT_ERRNO(EPERM);
        int r;
        /* B5: clone with any namespace flag; one rule per bit since libseccomp cannot express
         * "masked value != 0" (rules on one syscall are OR'ed). */
        for (unsigned bit = 0; bit < 64; bit++) {
                uint64_t b = 1ULL << bit;
                if (!((uint64_t)CLONE_NEW_MASK & b))
                        continue;
                r = seccomp_rule_add(ctx, eperm, SCMP_SYS(clone), 1,
                                     SCMP_A0(SCMP_CMP_MASKED_EQ, b, b));
                if (r < 0)
                        return r;
        }
        /* clone3 keeps its flags in memory, out of seccomp's reach: ENOSYS makes glibc fall
         * back to clone (battery B5). */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
        if (r < 0)
                return r;
        /* B12: raw IP sockets (the type's low 4 bits; flags live above). */
        /* EQ and NE compare datum_a only; the 0 fills datum_b (clang's
         * -Wmissing-field-initializers). */
        const int inet[] = {AF_INET, AF_INET6};
        for (size_t i = 0; i < ELEMENTSOF(inet); i++) {
                r = seccomp_rule_add(ctx, eperm, SCMP_SYS(socket), 2,
                                     SCMP_A0(SCMP_CMP_EQ, inet[i], 0),
                                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW));
                if (r < 0)
                        return r;
        }
        /* B12: netlink only as NETLINK_ROUTE (protocol 0): ip/getifaddrs need it; changing
         * anything needs CAP_NET_ADMIN, which the sandbox does not have. Any other protocol
         * gets the kernel's own answer for a netlink family it was built without,
         * EPROTONOSUPPORT: libaudit takes that as "no audit here" and useradd, passwd and
         * friends go on, where EPERM makes them abort ("Cannot open audit interface"). */
        r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPROTONOSUPPORT), SCMP_SYS(socket), 2,
                             SCMP_A0(SCMP_CMP_EQ, AF_NETLINK, 0), SCMP_A2(SCMP_CMP_NE, 0, 0));
        if (r < 0)
                return r;
        /* CVE-2017-5226: TIOCSTI injects input into the controlling tty; TIOCLINUX can too on
         * a VT. The kernel truncates cmd to 32 bits, so compare only those. */
        const unsigned long tty[] = {TIOCSTI, TIOCLINUX};
        for (size_t i = 0; i < ELEMENTSOF(tty); i++) {
                r = seccomp_rule_add(ctx, eperm, SCMP_SYS(ioctl), 1,
                                     SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, tty[i]));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int build_main(scmp_filter_ctx *ret)
{
        __attribute__((cleanup(seccomp_releasep))) scmp_filter_ctx ctx =
            seccomp_init(SCMP_ACT_ALLOW);
        if (!ctx)
                return -ENOMEM;
        /* B13: only the native ABI is in the filter; i386 (int 0x80) and any other arch get
         * ENOSYS instead of a kill, so the agent survives a probe. */
        int r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS));
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(deny_eperm); i++) {
                int nr = seccomp_syscall_resolve_name(deny_eperm[i]);
                if (nr == __NR_SCMP_ERROR || nr < 0)
                        continue;
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < ELEMENTSOF(deny_eperm_nr); i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), deny_eperm_nr[i], 0);
                if (r < 0)
                        return r;
        }
        r = add_arg_rules(ctx);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(ctx);
        return 0;
}

/* Exports ctx as classic BPF into a freshly allocated sock_fprog. */
static int export_bpf(scmp_filter_ctx ctx, struct sock_fprog *ret)
{
        _cleanup_close_ int fd = memfd_create("sbx-seccomp", MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return r;
        if (lseek(fd, 0, SEEK_SET) < 0)
                return -errno;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        r = read_all(fd, BPF_MAXINSNS * sizeof(struct sock_filter), &buf, &len);
        if (r < 0)
                return r;
        if (len == 0 || len % sizeof(struct sock_filter) != 0)
                return -EINVAL;
        ret->len = (unsigned short)(len / sizeof(struct sock_filter));
        ret->filter = (struct sock_filter *)(void *)TAKE_PTR(buf);
        return 0;
}

#if __BYTE_ORDER == __LITTLE_ENDIAN
#define ARG0_LO offsetof(struct seccomp_data, args[0])
#else
#define ARG0_LO (offsetof(struct seccomp_data, args[0]) + 4)
#endif

/* Instruction indices of the hand-written filter; jumps are relative (target - pc - 1). */
enum {
        X_LD_ARCH,
        X_CHECK_ARCH,
        X_LD_NR,
        X_CHECK_X32,
        X_IS_PERSONALITY,
        X_IS_SOCKET,
        X_PERS_LD,
        X_PERS_0,
        X_PERS_8,
        X_PERS_20000,
        X_PERS_20008,
        X_PERS_QUERY,
        X_SOCK_LD,
        X_SOCK_UNIX,
        X_SOCK_INET,
        X_SOCK_INET6,
        X_SOCK_NETLINK,
        X_RET_EPERM,
        X_RET_ENOSYS,
        X_RET_ALLOW,
        X_COUNT,
};
#define J(from, to)            ((unsigned char)((to) - (from)-1))
#define JEQ(at, k, to_t, to_f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), J(at, to_t), J(at, to_f))

/* What libseccomp 2.5 cannot say with a default-allow filter ("argument not in a set"):
 *  - personality: only Docker's values 0, PER_LINUX32 (8), UNAME26 (0x20000), both (0x20008)
 *    and the 0xffffffff query (battery B10); the kernel reads the argument as 32 bits;
 *  - socket: only AF_UNIX, AF_INET, AF_INET6, AF_NETLINK (battery B12: AF_PACKET, AF_VSOCK, and
 *    with them AF_ALG, AF_TIPC, AF_RDS... with their CVE histories), family read as 32 bits;
 *  - x32 (nr | 0x40000000 shares AUDIT_ARCH_X86_64): ENOSYS (battery B13).
 * Other archs pass through: the main filter's bad-arch action answers them. */
static int build_extra(struct sock_fprog *ret)
{
        const uint32_t native = seccomp_arch_native();
        const struct sock_filter prog[X_COUNT] = {
            [X_LD_ARCH] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
            [X_CHECK_ARCH] = JEQ(X_CHECK_ARCH, native, X_LD_NR, X_RET_ALLOW),
            [X_LD_NR] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            [X_CHECK_X32] =
                BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, J(X_CHECK_X32, X_RET_ENOSYS),
                         J(X_CHECK_X32, X_IS_PERSONALITY)),
            [X_IS_PERSONALITY] = JEQ(X_IS_PERSONALITY, __NR_personality, X_PERS_LD, X_IS_SOCKET),
            [X_IS_SOCKET] = JEQ(X_IS_SOCKET, __NR_socket, X_SOCK_LD, X_RET_ALLOW),
            [X_PERS_LD] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO),
            [X_PERS_0] = JEQ(X_PERS_0, 0, X_RET_ALLOW, X_PERS_8),
            [X_PERS_8] = JEQ(X_PERS_8, 0x8, X_RET_ALLOW, X_PERS_20000),
            [X_PERS_20000] = JEQ(X_PERS_20000, 0x20000, X_RET_ALLOW, X_PERS_20008),
            [X_PERS_20008] = JEQ(X_PERS_20008, 0x20008, X_RET_ALLOW, X_PERS_QUERY),
            [X_PERS_QUERY] = JEQ(X_PERS_QUERY, 0xffffffff, X_RET_ALLOW, X_RET_EPERM),
            [X_SOCK_LD] = BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO),
            [X_SOCK_UNIX] = JEQ(X_SOCK_UNIX, AF_UNIX, X_RET_ALLOW, X_SOCK_INET),
            [X_SOCK_INET] = JEQ(X_SOCK_INET, AF_INET, X_RET_ALLOW, X_SOCK_INET6),
            [X_SOCK_INET6] = JEQ(X_SOCK_INET6, AF_INET6, X_RET_ALLOW, X_SOCK_NETLINK),
            [X_SOCK_NETLINK] = JEQ(X_SOCK_NETLINK, AF_NETLINK, X_RET_ALLOW, X_RET_EPERM),
            [X_RET_EPERM] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
            [X_RET_ENOSYS] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            [X_RET_ALLOW] = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_filter *copy = malloc(sizeof(prog));
        if (!copy)
                return -ENOMEM;
        memcpy(copy, prog, sizeof(prog));
        *ret = (struct sock_fprog){.len = X_COUNT, .filter = copy};
        return 0;
}

int jail_seccomp_compile(struct jail_seccomp *ret)
{
        __attribute__((cleanup(seccomp_releasep))) scmp_filter_ctx ctx = NULL;
        struct jail_seccomp f = {0};
        int r = build_main(&ctx);
        if (r < 0)
                return r;
        r = export_bpf(ctx, &f.main);
        if (r < 0)
                return r;
        r = build_extra(&f.extra);
        if (r < 0) {
                jail_seccomp_done(&f);
                return r;
        }
        *ret = f;
        return 0;
}

int jail_seccomp_load(const struct jail_seccomp *f)
{
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &f->main, 0, 0) < 0)
                return -errno;
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &f->extra, 0, 0) < 0)
                return -errno;
        return 0;
}

void jail_seccomp_done(struct jail_seccomp *f)
{
        free(f->main.filter);
        free(f->extra.filter);
        *f = (struct jail_seccomp){0};
}
