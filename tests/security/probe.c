/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbx-probe: runs inside a sandbox (uploaded by the security suite) and reports, as one
 * JSON object per line, what sandbox code can see and do. It never decides pass/fail itself:
 * the node tests assert on the facts it prints.
 *
 *   sbx-probe identity   process identity: status fields, namespaces, fds, pid 1
 *   sbx-probe syscalls   each escape-battery group B syscall with harmless arguments
 *   sbx-probe net        interfaces, routes, and connects to non-loopback targets
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/keyctl.h>
#include <netinet/in.h>
#include <poll.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <unistd.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static void json_val(const char *v)
{
        putchar('"');
        for (; *v; v++) {
                if (*v == '"' || *v == '\\')
                        printf("\\%c", *v);
                else if ((unsigned char)*v < 0x20)
                        printf("\\u%04x", *v);
                else
                        putchar(*v);
        }
        putchar('"');
}

static void json_str(const char *key, const char *v, int last)
{
        printf("\"%s\":", key);
        json_val(v);
        printf("%s", last ? "" : ",");
}

static void status_field(const char *name, char *out, size_t n)
{
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        out[0] = 0;
        if (!f)
                return;
        size_t l = strlen(name);
        while (fgets(line, sizeof(line), f)) {
                if (strncmp(line, name, l) == 0 && line[l] == ':') {
                        char *v = line + l + 1;
                        v += strspn(v, " \t");
                        v[strcspn(v, "\n")] = 0;
                        snprintf(out, n, "%s", v);
                }
        }
        fclose(f);
}

static void read_small(const char *path, char *out, size_t n)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        out[0] = 0;
        if (fd < 0) {
                snprintf(out, n, "error:%d", errno);
                return;
        }
        ssize_t r = read(fd, out, n - 1);
        out[r > 0 ? r : 0] = 0;
        close(fd);
}

static int identity(void)
{
        char v[512];
        printf("{");
        const char *fields[] = {"NoNewPrivs", "Seccomp", "CapEff", "CapPrm", "CapInh",
                                "CapBnd",     "CapAmb",  "Uid",    "Gid"};
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
                status_field(fields[i], v, sizeof(v));
                json_str(fields[i], v, 0);
        }
        read_small("/proc/self/uid_map", v, sizeof(v));
        json_str("uid_map", v, 0);
        read_small("/proc/self/gid_map", v, sizeof(v));
        json_str("gid_map", v, 0);
        read_small("/proc/1/comm", v, sizeof(v));
        v[strcspn(v, "\n")] = 0;
        json_str("pid1_comm", v, 0);
        const char *ns[] = {"user", "pid", "mnt", "net", "ipc", "uts", "cgroup"};
        printf("\"ns\":{");
        for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
                char p[64];
                snprintf(p, sizeof(p), "/proc/self/ns/%s", ns[i]);
                ssize_t r = readlink(p, v, sizeof(v) - 1);
                v[r > 0 ? r : 0] = 0;
                json_str(ns[i], v, i + 1 == sizeof(ns) / sizeof(ns[0]));
        }
        printf("},\"fds\":[");
        DIR *d = opendir("/proc/self/fd");
        int first = 1, dfd = d ? dirfd(d) : -1;
        struct dirent *e;
        while (d && (e = readdir(d))) {
                if (e->d_name[0] == '.' || atoi(e->d_name) == dfd)
                        continue;
                char p[300];
                snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
                ssize_t r = readlink(p, v, sizeof(v) - 1);
                v[r > 0 ? r : 0] = 0;
                printf("%s{\"fd\":%s,", first ? "" : ",", e->d_name);
                json_str("target", v, 1);
                printf("}");
                first = 0;
        }
        if (d)
                closedir(d);
        printf("],");
        /* A7: pid 1's root and a host pid must be unreachable. */
        int r1 = open("/proc/1/root/etc/passwd", O_RDONLY | O_CLOEXEC);
        printf("\"proc1_root_errno\":%d,", r1 < 0 ? errno : 0);
        if (r1 >= 0)
                close(r1);
        DIR *p = opendir("/proc");
        int max_pid = 0;
        while (p && (e = readdir(p)))
                if (atoi(e->d_name) > max_pid)
                        max_pid = atoi(e->d_name);
        if (p)
                closedir(p);
        printf("\"max_visible_pid\":%d,", max_pid);
        /* CVE-2019-5736: pid 1's executable must not be writable. */
        int w = open("/proc/1/exe", O_WRONLY | O_CLOEXEC);
        printf("\"proc1_exe_write_errno\":%d,", w < 0 ? errno : 0);
        if (w >= 0)
                close(w);
        w = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
        printf("\"self_exe_write_errno\":%d", w < 0 ? errno : 0);
        if (w >= 0)
                close(w);
        printf("}\n");
        return 0;
}

static void report(const char *name, long r)
{
        printf("{\"syscall\":\"%s\",\"ret\":%ld,\"errno\":%d}\n", name, r, r < 0 ? errno : 0);
        fflush(stdout);
}

#define TRY(name, ...)                                                                             \
        do {                                                                                       \
                errno = 0;                                                                         \
                long _r = syscall(__VA_ARGS__);                                                    \
                report(name, _r);                                                                  \
        } while (0)

static int syscalls(void)
{
        /* Arguments are chosen so that a call that got past seccomp and capabilities fails with
         * EINVAL/EFAULT/ENOENT/EBADF instead of doing anything: only EPERM/ENOSYS mean denied. */
        TRY("keyctl", SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0);
        TRY("add_key", SYS_add_key, "user", "sbx", "x", 1, KEY_SPEC_SESSION_KEYRING);
        TRY("request_key", SYS_request_key, "user", "sbx-none", NULL, 0);
        TRY("bpf", SYS_bpf, 0, NULL, 0);
        TRY("perf_event_open", SYS_perf_event_open, NULL, 0, -1, -1, 0);
        TRY("userfaultfd", SYS_userfaultfd, 0);
        TRY("mount", SYS_mount, "none", "/tmp", "tmpfs", 0, NULL);
        TRY("umount2", SYS_umount2, "/proc", 2);
        TRY("pivot_root", SYS_pivot_root, "/tmp", "/tmp");
        TRY("chroot", SYS_chroot, "/tmp");
        TRY("fsopen", SYS_fsopen, "tmpfs", 0);
        TRY("fsconfig", SYS_fsconfig, -1, 0, NULL, NULL, 0);
        TRY("fsmount", SYS_fsmount, -1, 0, 0);
        TRY("move_mount", SYS_move_mount, -1, "", -1, "", 0);
        TRY("open_tree", SYS_open_tree, AT_FDCWD, "/tmp", 1 /* OPEN_TREE_CLONE */);
        TRY("mount_setattr", SYS_mount_setattr, AT_FDCWD, "/tmp", 0, NULL, 0);
        TRY("ptrace_attach_pid1", SYS_ptrace, 16 /* PTRACE_ATTACH */, 1, 0, 0);
        TRY("ptrace_seize_pid1", SYS_ptrace, 0x4206 /* PTRACE_SEIZE */, 1, 0, 0);
        TRY("ptrace_attach_parent", SYS_ptrace, 16, getppid(), 0, 0);
        TRY("ptrace_traceme", SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0);
        TRY("process_vm_readv", SYS_process_vm_readv, 1, NULL, 0, NULL, 0, 0);
        TRY("process_vm_writev", SYS_process_vm_writev, 1, NULL, 0, NULL, 0, 0);
        TRY("kcmp", SYS_kcmp, getpid(), 1, 0 /* KCMP_FILE */, 0, 0);
        TRY("pidfd_getfd", SYS_pidfd_getfd, -1, 0, 0);
        TRY("unshare_user", SYS_unshare, CLONE_NEWUSER);
        TRY("unshare_ns", SYS_unshare, CLONE_NEWNS);
        TRY("unshare_net", SYS_unshare, CLONE_NEWNET);
        TRY("unshare_cgroup", SYS_unshare, CLONE_NEWCGROUP);
        TRY("setns", SYS_setns, -1, 0);
        TRY("clone_newuser", SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
        TRY("clone_newpid", SYS_clone, CLONE_NEWPID | SIGCHLD, NULL, NULL, NULL, 0);
        TRY("clone3", SYS_clone3, NULL, 0);
        TRY("init_module", SYS_init_module, NULL, 0, "");
        TRY("finit_module", SYS_finit_module, -1, "", 0);
        TRY("delete_module", SYS_delete_module, "sbx_none", 0);
        TRY("kexec_load", SYS_kexec_load, 0, 0, NULL, 0);
        TRY("kexec_file_load", SYS_kexec_file_load, -1, -1, 0, "", 0);
        TRY("open_by_handle_at", SYS_open_by_handle_at, AT_FDCWD, NULL, 0);
        TRY("name_to_handle_at", SYS_name_to_handle_at, AT_FDCWD, "/", NULL, NULL, 0);
        TRY("iopl", SYS_iopl, 0);
        TRY("ioperm", SYS_ioperm, 0, 0, 0);
        TRY("swapon", SYS_swapon, "/nonexistent", 0);
        TRY("swapoff", SYS_swapoff, "/nonexistent");
        TRY("reboot", SYS_reboot, 0, 0, 0, NULL);
        TRY("acct", SYS_acct, "/nonexistent");
        TRY("quotactl", SYS_quotactl, 0, "/nonexistent", 0, NULL);
        TRY("settimeofday", SYS_settimeofday, NULL, NULL);
        TRY("clock_settime", SYS_clock_settime, 99, NULL);
        TRY("adjtimex", SYS_adjtimex, NULL);
        TRY("personality", SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */);
        TRY("vhangup", SYS_vhangup);
        TRY("io_uring_setup", SYS_io_uring_setup, 1, NULL);
        TRY("io_uring_enter", SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0);
        TRY("io_uring_register", SYS_io_uring_register, -1, 0, NULL, 0);
        TRY("socket_packet", SYS_socket, 17, SOCK_RAW, 0);
        TRY("socket_raw_inet", SYS_socket, AF_INET, SOCK_RAW, IPPROTO_ICMP);
        TRY("socket_vsock", SYS_socket, AF_VSOCK, SOCK_STREAM, 0);
        TRY("socket_netlink_audit", SYS_socket, AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */);
        TRY("socket_netlink_kobject", SYS_socket, AF_NETLINK, SOCK_RAW, 15);
        TRY("fanotify_init", SYS_fanotify_init, 0, 0);
        char c = 'x';
        TRY("ioctl_tiocsti", SYS_ioctl, 0, TIOCSTI, &c);
        /* B13: an x32 syscall number (getpid | __X32_SYSCALL_BIT). */
        TRY("x32_getpid", 0x40000000L | SYS_getpid);
        /* B13: the i386 int 0x80 entry (getpid is 20 there). */
        long r;
        errno = 0;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");
        /* The raw entry returns -errno in rax; report it like the libc path does. */
        printf("{\"syscall\":\"int80_getpid\",\"ret\":%ld,\"errno\":%d}\n",
               r < 0 && r > -4096 ? -1L : r, r < 0 && r > -4096 ? (int)-r : 0);
        /* The ordinary calls still work. */
        TRY("getpid", SYS_getpid);
        return 0;
}

static int try_connect(int family, const char *addr, int port, int type)
{
        int s = socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s < 0)
                return errno;
        int r;
        if (family == AF_INET) {
                struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
                inet_pton(AF_INET, addr, &sa.sin_addr);
                r = connect(s, (struct sockaddr *)&sa, sizeof(sa));
        } else {
                struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
                inet_pton(AF_INET6, addr, &sa.sin6_addr);
                r = connect(s, (struct sockaddr *)&sa, sizeof(sa));
        }
        int e = r < 0 ? errno : 0;
        if (e == EINPROGRESS) {
                /* The outcome comes later: wait for it briefly. Still pending means a packet may
                 * have left, which the test treats as a failure (errno stays EINPROGRESS). */
                struct pollfd p = {.fd = s, .events = POLLOUT};
                if (poll(&p, 1, 1000) == 1) {
                        socklen_t l = sizeof(e);
                        getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &l);
                }
        }
        if (type == SOCK_DGRAM && r == 0) {
                /* UDP connect succeeds locally; sending must fail without a route. */
                r = (int)send(s, "x", 1, 0);
                e = r < 0 ? errno : 0;
        }
        close(s);
        return e;
}

static int net(int argc, char **argv)
{
        char buf[4096];
        read_small("/proc/net/dev", buf, sizeof(buf));
        printf("{\"netdev\":");
        json_val(buf);
        read_small("/proc/net/route", buf, sizeof(buf));
        printf(",\"route4\":");
        json_val(buf);
        read_small("/proc/net/ipv6_route", buf, sizeof(buf));
        printf(",\"route6\":");
        json_val(buf);
        printf("}\n");
        fflush(stdout);

        /* Safety: only attempt outside addresses when this namespace has no route at all, so a
         * failed connect never emits a packet. The test asserts on the routes first. */
        FILE *f = fopen("/proc/net/route", "re");
        int lines = 0;
        while (f && fgets(buf, sizeof(buf), f))
                lines++;
        if (f)
                fclose(f);
        if (lines > 1) {
                printf("{\"skipped\":\"routes present\"}\n");
                return 0;
        }
        int host_port = argc > 2 ? atoi(argv[2]) : 3000;
        struct {
                int family, port, type;
                const char *addr;
        } t[] = {
            {AF_INET, 80, SOCK_STREAM, "169.254.169.254"},
            {AF_INET, 80, SOCK_STREAM, "10.0.0.1"},
            {AF_INET, 443, SOCK_STREAM, "1.1.1.1"},
            {AF_INET, 53, SOCK_DGRAM, "8.8.8.8"},
            {AF_INET, 80, SOCK_STREAM, "100.64.0.1"},
            {AF_INET, host_port, SOCK_STREAM, "127.0.0.1"},
            {AF_INET6, host_port, SOCK_STREAM, "::1"},
            {AF_INET6, 80, SOCK_STREAM, "fd00::1"},
            {AF_INET6, 80, SOCK_STREAM, "2001:4860:4860::8888"},
        };
        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                int e = try_connect(t[i].family, t[i].addr, t[i].port, t[i].type);
                printf("{\"target\":\"%s\",\"port\":%d,\"proto\":\"%s\",\"errno\":%d}\n", t[i].addr,
                       t[i].port, t[i].type == SOCK_DGRAM ? "udp" : "tcp", e);
        }
        return 0;
}

/* The syscall and network probes make real calls (mount, umount2, kexec_load, ...) that are
 * only harmless when something denies them. Refuse to run them outside a user namespace: on
 * the host, as root, they would act on the host. */
static int in_sandbox(void)
{
        char m[256];
        read_small("/proc/self/uid_map", m, sizeof(m));
        unsigned long inside, outside, count;
        if (sscanf(m, "%lu %lu %lu", &inside, &outside, &count) != 3)
                return 0;
        return !(inside == 0 && outside == 0 && count == 4294967295UL);
}

int main(int argc, char **argv)
{
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (argc < 2)
                return 2;
        if (strcmp(argv[1], "identity") != 0 && !in_sandbox()) {
                fprintf(stderr, "sbx-probe: refusing to run '%s' outside a sandbox\n", argv[1]);
                return 3;
        }
        if (strcmp(argv[1], "identity") == 0)
                return identity();
        if (strcmp(argv[1], "syscalls") == 0)
                return syscalls();
        if (strcmp(argv[1], "net") == 0)
                return net(argc, argv);
        return 2;
}
