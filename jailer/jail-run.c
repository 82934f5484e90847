/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-run.h"

#include "fd-util.h"
#include "jail-cgroup.h"
#include "jail-error.h"
#include "jail-mount.h"
#include "jail-net.h"
#include "jail-proc.h"
#include "jail-seccomp.h"
#include "jail-spec.h"
#include "jail-ucount.h"
#include "log.h"
#include "macros.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* Step names: the "step" of a failure status line. Order is the pipeline's. */
#define STEPS(X)                                                                                   \
        X(READ_SPEC, "read-spec")                                                                  \
        X(SECCOMP_COMPILE, "seccomp-compile")                                                      \
        X(RLIMITS, "rlimits")                                                                      \
        X(CGROUPS, "cgroups")                                                                      \
        X(SOCKET, "socket")                                                                        \
        X(PRIVATE_MOUNTS, "private-mounts")                                                        \
        X(CLONE, "clone")                                                                          \
        X(ID_MAP, "id-map")                                                                        \
        X(MOUNT_ROOT, "mount-root")                                                                \
        X(START, "start")                                                                          \
        X(EGRESS, "egress")                                                                        \
        X(UNSHARE_MOUNTS, "unshare-mounts")                                                        \
        X(BECOME_ROOT, "become-root")                                                              \
        X(UCOUNT_LIMITS, "ucount-limits")                                                          \
        X(HOSTNAME, "hostname")                                                                    \
        X(LOOPBACK, "loopback")                                                                    \
        X(MOUNT_PROC, "mount-proc")                                                                \
        X(MOUNT_DEVPTS, "mount-devpts")                                                            \
        X(PIVOT_ROOT, "pivot-root")                                                                \
        X(DROP_CAPS, "drop-caps")                                                                  \
        X(CLOSE_FDS, "close-fds")                                                                  \
        X(NO_NEW_PRIVS, "no-new-privs")                                                            \
        X(SECCOMP_LOAD, "seccomp-load")                                                            \
        X(EXEC, "exec")

#define STEP_ENUM(e, s) STEP_##e,
#define STEP_NAME(e, s) [STEP_##e] = s,
enum step { STEPS(STEP_ENUM) STEP_COUNT };
static const char *const step_names[STEP_COUNT] = {STEPS(STEP_NAME)};

#define CHILD_TIMEOUT_MS 30000
#define CLONE_FLAGS                                                                                \
        (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |               \
         CLONE_NEWCGROUP)

/* child → parent over the sync socket (SOCK_SEQPACKET: one report per message). */
struct report {
        int32_t step;
        int32_t error; /* positive errno */
        char message[400];
};

struct jail {
        struct sbx_jail_spec *spec;
        struct jail_seccomp seccomp;
        struct jail_cgroup cgroup;
        struct jail_ucount ucount; /* the limits the child writes in its user namespace */
        int listen_fd;
        int sync_fd; /* parent's or child's end, depending on the side */
        int socket_made;
        pid_t pid; /* host pid of the child, 0 before clone */
        int idmapped;
        int egress_made; /* the veth pair exists: undo() deletes it */
        /* failure */
        enum step failed_step;
        int error;
        char message[400];
};

/* Records a failure of step with -errno r and a message (the recorded jail_errorf() detail if
 * any, else text + strerror). Returns -1 for `return fail(...)`. */
static int fail(struct jail *j, enum step step, int r, const char *text)
{
        const char *detail = jail_error_message();
        j->failed_step = step;
        j->error = r < 0 ? -r : r;
        if (detail)
                snprintf(j->message, sizeof(j->message), "%s", detail);
        else
                snprintf(j->message, sizeof(j->message), "%s: %s", text, strerror(j->error));
        return -1;
}

/* ---- child side: runs inside the new namespaces, reports the first failure and _exits ---- */

_noreturn_ static void child_fail(struct jail *j, enum step step, int r, const char *text)
{
        struct report rep = {.step = (int32_t)step};
        (void)fail(j, step, r, text);
        rep.error = j->error;
        snprintf(rep.message, sizeof(rep.message), "%s", j->message);
        (void)send(j->sync_fd, &rep, sizeof(rep), MSG_NOSIGNAL);
        _exit(1);
}

#define CHILD_STEP(j, step, expr, text)                                                            \
        do {                                                                                       \
                int _r = (expr);                                                                   \
                if (_r < 0)                                                                        \
                        child_fail((j), (step), _r, (text));                                       \
        } while (0)

/* One byte from the parent, with an O_PATH fd of the root it built (SCM_RIGHTS). */
static int step_wait_start(struct jail *j, int *ret_root_fd)
{
        char go;
        struct iovec iov = {.iov_base = &go, .iov_len = 1};
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } c;
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = c.buf,
                           .msg_controllen = sizeof(c.buf)};
        ssize_t n = recvmsg(j->sync_fd, &m, MSG_CMSG_CLOEXEC);
        if (n <= 0)
                return n < 0 ? -errno : -EPIPE; /* the parent gave up */
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        if (n != 1 || !h || h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS ||
            h->cmsg_len != CMSG_LEN(sizeof(int)))
                return -EPROTO;
        memcpy(ret_root_fd, CMSG_DATA(h), sizeof(int));
        return 0;
}

/* Our own copy of the mounts (owned by our user namespace, every inherited mount locked), and
 * the root opened in it. We are host uid_base from birth (the user namespace's owner), so the
 * root comes as an fd from the parent: its path crosses sbxd's 0700 root-owned state dir. */
static int step_unshare_mounts(int *root_fd)
{
        int fd = jail_mount_unshare_at(*root_fd);
        *root_fd = safe_close(*root_fd);
        if (fd < 0)
                return fd;
        *root_fd = fd;
        return 0;
}

/* The parent has written the maps: become sandbox root (host uid_base), drop the host's
 * supplementary groups, and die with the parent until exec (credential changes clear the
 * parent-death signal, so set it after them). */
static int step_become_root(struct jail *j)
{
        if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
                return -errno;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

static int step_hostname(struct jail *j)
{
        return sethostname(j->spec->id, strlen(j->spec->id)) < 0 ? -errno : 0;
}

static int step_no_new_privs(void)
{
        return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? -errno : 0;
}

static void reset_signals(void)
{
        sigset_t all;
        sigemptyset(&all);
        (void)sigprocmask(SIG_SETMASK, &all, NULL);
        for (int sig = 1; sig < NSIG; sig++)
                (void)signal(sig, SIG_DFL);
}

_noreturn_ static void child_main(struct jail *j)
{
        const struct sbx_jail_spec *s = j->spec;
        char **env = NULL; /* this function only execs or _exits: nothing to free */
        int root_fd = -EBADF;

        reset_signals();
        CHILD_STEP(j, STEP_START, step_wait_start(j, &root_fd), "wait for parent");
        CHILD_STEP(j, STEP_UNSHARE_MOUNTS, step_unshare_mounts(&root_fd),
                   "unshare mount namespace");
        CHILD_STEP(j, STEP_BECOME_ROOT, step_become_root(j), "become sandbox root");
        CHILD_STEP(j, STEP_UCOUNT_LIMITS, jail_ucount_limit(&j->ucount),
                   "limits of the user namespace");
        CHILD_STEP(j, STEP_HOSTNAME, step_hostname(j), "sethostname");
        CHILD_STEP(j, STEP_LOOPBACK, jail_net_loopback_up(), "bring lo up");
        CHILD_STEP(j, STEP_MOUNT_PROC, jail_mount_proc(root_fd), "mount /proc");
        CHILD_STEP(j, STEP_MOUNT_DEVPTS, jail_mount_devpts(root_fd), "mount /dev/pts");
        CHILD_STEP(j, STEP_PIVOT_ROOT, jail_mount_pivot(root_fd), "pivot_root");
        root_fd = safe_close(root_fd);
        CHILD_STEP(j, STEP_EXEC, jail_proc_env(s, &env), "build environment");
        CHILD_STEP(j, STEP_DROP_CAPS, jail_proc_drop_caps(), "drop capabilities");
        CHILD_STEP(j, STEP_CLOSE_FDS, jail_proc_fds(j->listen_fd, &j->sync_fd), "close fds");
        CHILD_STEP(j, STEP_NO_NEW_PRIVS, step_no_new_privs(), "PR_SET_NO_NEW_PRIVS");
        /* Until exec the parent-death signal stays armed; the agent must outlive the jailer. */
        CHILD_STEP(j, STEP_NO_NEW_PRIVS, prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0) < 0 ? -errno : 0,
                   "clear PR_SET_PDEATHSIG");
        CHILD_STEP(j, STEP_SECCOMP_LOAD, jail_seccomp_load(&j->seccomp), "load seccomp filter");
        char *const argv[] = {(char *)"sbx-agent", NULL};
        execve(JAIL_AGENT_PATH, argv, env);
        child_fail(j, STEP_EXEC, -errno, "execve " JAIL_AGENT_PATH);
}

/* ---- parent side: host root ---- */

static int step_read_spec(struct jail *j, int spec_fd)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        const char *msg = NULL;
        int r = read_all(spec_fd, SBX_JAIL_SPEC_MAX, &buf, &len);
        if (r < 0)
                return fail(j, STEP_READ_SPEC, r, "read spec fd");
        r = sbx_jail_spec_decode(buf, len, &j->spec, &msg);
        if (r == -EINVAL) {
                jail_errorf(r, "invalid spec: %s", msg);
                return fail(j, STEP_READ_SPEC, r, "parse spec");
        }
        if (r < 0)
                return fail(j, STEP_READ_SPEC, r, "parse spec");
        return 0;
}

static int step_cgroups(struct jail *j)
{
        int r = jail_cgroup_create(&j->cgroup, j->spec);
        if (r < 0)
                return fail(j, STEP_CGROUPS, r, "create cgroups");
        /* Before clone: the child's cgroup namespace root becomes the sandbox cgroup. */
        r = jail_cgroup_attach(&j->cgroup);
        if (r < 0)
                return fail(j, STEP_CGROUPS, r, "join cgroups");
        return 0;
}

/* The agent's listening socket, host side only: 0600, root-owned, backlog 128. A path longer
 * than sun_path is bound through /proc/self/fd/<dirfd>/<name> (the name is short). */
static int step_socket(struct jail *j)
{
        const char *path = j->spec->socket;
        const char *name = strrchr(path, '/') + 1;
        _cleanup_free_ char *dir = strndup(path, (size_t)(name - path));
        _cleanup_close_ int dfd = -EBADF;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        if (!dir)
                return fail(j, STEP_SOCKET, -ENOMEM, "socket path");
        if (strlen(path) < sizeof(sa.sun_path)) {
                memcpy(sa.sun_path, path, strlen(path) + 1);
        } else {
                dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (dfd < 0)
                        return fail(j, STEP_SOCKET, -errno, "open socket dir");
                if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dfd,
                                     name) >= sizeof(sa.sun_path))
                        return fail(j, STEP_SOCKET, -ENAMETOOLONG, "socket name");
        }
        j->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (j->listen_fd < 0)
                return fail(j, STEP_SOCKET, -errno, "socket");
        if (unlink(path) < 0 && errno != ENOENT)
                return fail(j, STEP_SOCKET, -errno, "unlink stale socket");
        mode_t old = umask(0177); /* the inode is born 0600: no window with a wider mode */
        int r = bind(j->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
        umask(old);
        if (r < 0)
                return fail(j, STEP_SOCKET, -errno, "bind socket");
        j->socket_made = 1;
        if (chmod(path, 0600) < 0 || listen(j->listen_fd, 128) < 0)
                return fail(j, STEP_SOCKET, -errno, "listen on socket");
        return 0;
}

static int step_clone(struct jail *j)
{
        int sp[2], securebits, r;
        if ((r = jail_ucount_plan(&j->ucount)) < 0)
                return fail(j, STEP_CLONE, r, "per-user limits");
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
                return fail(j, STEP_CLONE, -errno, "socketpair");
        /* The new user namespace is owned by the effective uid that creates it, and what is
         * charged inside (inotify, mqueue bytes, pending signals, ...) is charged to its owner
         * too: make that the sandbox's own host uid, not root. */
        if ((r = jail_ucount_owner_enter(j->spec->uid_base, &securebits)) < 0) {
                close(sp[0]);
                close(sp[1]);
                return fail(j, STEP_CLONE, r, "become the namespace's owner");
        }
        /* Raw clone has fork semantics (no stack). The child shares our private mount
         * namespace until the parent has built the root (step mount-root), then unshares its
         * own copy, owned by its user namespace, where every inherited mount is locked. */
        pid_t pid = (pid_t)syscall(SYS_clone, CLONE_FLAGS | SIGCHLD, NULL, NULL, NULL, NULL);
        int clone_errno = errno;
        if (pid == 0) {
                close(sp[0]);
                j->sync_fd = sp[1];
                child_main(j);
        }
        r = jail_ucount_owner_leave(securebits);
        if (pid < 0 || r < 0) {
                close(sp[0]);
                close(sp[1]);
                if (pid > 0)
                        j->pid = pid; /* undo() kills it */
                return pid < 0 ? fail(j, STEP_CLONE, -clone_errno, "clone")
                               : fail(j, STEP_CLONE, r, "back to uid 0");
        }
        close(sp[1]);
        j->sync_fd = sp[0];
        j->pid = pid;
        return 0;
}

static int write_map(pid_t pid, const char *which, uint32_t base, uint32_t count)
{
        char path[64], map[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, which);
        snprintf(map, sizeof(map), "0 %u %u\n", base, count);
        return write_file(path, map);
}

/* Sandbox ids 0..count-1 → host base..base+count-1 for uids and gids. Written by host root,
 * so setgroups stays "allow": the agent needs setgroups() to serve several users. */
static int step_id_map(struct jail *j)
{
        int r = write_map(j->pid, "uid_map", j->spec->uid_base, j->spec->uid_count);
        if (r >= 0)
                r = write_map(j->pid, "gid_map", j->spec->uid_base, j->spec->uid_count);
        return r < 0 ? fail(j, STEP_ID_MAP, r, "write uid_map/gid_map") : 0;
}

/* The egress link (jailer/README.md step 11), only when the spec asks for one: without it the
 * sandbox has loopback alone and this step costs nothing. It runs once the child has its go,
 * alongside the child's own steps. */
static int step_egress(struct jail *j)
{
        if (!j->spec->egress)
                return 0;
        int r = jail_net_egress(j->spec->egress, j->pid);
        if (r < 0)
                return fail(j, STEP_EGRESS, r, "egress link");
        j->egress_made = 1;
        return 0;
}

/* A user namespace that maps sandbox id 0 alone (host base, uids and gids), for the read-only
 * binds of host directories (jail_mount_root): host root's files there show as sandbox root's,
 * every other host id as nobody, so the capabilities sandbox root holds (CAP_DAC_OVERRIDE and
 * the like, which the kernel applies only to inodes whose owner maps into the sandbox) never
 * reach a host user's files, whatever host uid owns them. A short-lived child holds the
 * namespace while its maps are written and its fd opened; the fd (and the mounts idmapped
 * through it) keep it afterwards. Returns the fd or -errno. */
static int root_only_userns(uint32_t base)
{
        char path[64];
        int p[2], fd = -EBADF, r = 0, st;
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, NULL);
        if (pid == 0) {
                char c;
                close(p[1]);
                (void)!read(p[0], &c, 1); /* until the parent closes its end */
                _exit(0);
        }
        close(p[0]);
        if (pid < 0)
                r = -errno;
        if (r == 0)
                r = write_map(pid, "uid_map", base, 1);
        if (r >= 0)
                r = write_map(pid, "gid_map", base, 1);
        if (r >= 0) {
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
                fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        r = -errno;
        }
        close(p[1]);
        if (pid > 0)
                while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                        ;
        return r < 0 ? r : fd;
}

static int step_mount_root(struct jail *j)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)j->pid);
        _cleanup_close_ int userns = open(path, O_RDONLY | O_CLOEXEC);
        if (userns < 0)
                return fail(j, STEP_MOUNT_ROOT, -errno, "open child user namespace");
        _cleanup_close_ int bind_userns = -EBADF;
        if ((j->spec->n_binds > 0 || j->spec->runtime) &&
            (bind_userns = root_only_userns(j->spec->uid_base)) < 0)
                return fail(j, STEP_MOUNT_ROOT, bind_userns, "user namespace for the binds");
        int r = jail_mount_root(j->spec, userns, bind_userns, &j->idmapped);
        return r < 0 ? fail(j, STEP_MOUNT_ROOT, r, "build root") : 0;
}

/* Sends the go byte with an O_PATH fd of the root (the child cannot open its path). */
static int send_go(int sync_fd, int root_fd)
{
        char go = 'g';
        struct iovec iov = {.iov_base = &go, .iov_len = 1};
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } c;
        memset(&c, 0, sizeof(c));
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = c.buf,
                           .msg_controllen = sizeof(c.buf)};
        struct cmsghdr *h = CMSG_FIRSTHDR(&m);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(h), &root_fd, sizeof(int));
        return sendmsg(sync_fd, &m, MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

/* Lets the child go and waits for it: EOF on the sync socket means the agent was exec'd (the
 * child's end is O_CLOEXEC); a report means a child step failed. */
static int step_start(struct jail *j)
{
        _cleanup_close_ int root_fd = jail_mount_open_root(j->spec->rootfs);
        if (root_fd < 0)
                return fail(j, STEP_START, root_fd, "open the root");
        int r = send_go(j->sync_fd, root_fd);
        if (r < 0)
                return fail(j, STEP_START, r, "signal child");
        root_fd = safe_close(root_fd);
        /* while the child runs its steps: the link's setup does not hold it up. When it
         * fails because the child failed first (its namespace gone), the child's report is
         * the one worth sending. */
        int egress = step_egress(j);
        struct pollfd p = {.fd = j->sync_fd, .events = POLLIN};
        int n = poll(&p, 1, egress < 0 ? 0 : CHILD_TIMEOUT_MS);
        if (egress < 0 && n <= 0)
                return egress;
        if (n == 0)
                return fail(j, STEP_START, -ETIMEDOUT, "child did not exec in time");
        if (n < 0)
                return fail(j, STEP_START, -errno, "poll sync socket");
        struct report rep;
        ssize_t got = recv(j->sync_fd, &rep, sizeof(rep), 0);
        if (got < 0)
                return fail(j, STEP_START, -errno, "read sync socket");
        if (got == (ssize_t)sizeof(rep)) {
                j->failed_step = rep.step >= 0 && rep.step < STEP_COUNT ? rep.step : STEP_START;
                j->error = rep.error;
                rep.message[sizeof(rep.message) - 1] = 0;
                snprintf(j->message, sizeof(j->message), "%s", rep.message);
                return -1;
        }
        if (egress < 0) /* no report from the child: the link's failure stands */
                return egress;
        if (got != 0)
                return fail(j, STEP_START, -EPROTO, "short report from child");
        int status;
        if (waitpid(j->pid, &status, WNOHANG) == j->pid) {
                j->pid = 0;
                return fail(j, STEP_EXEC, -ECHILD, "child died before exec");
        }
        return 0;
}

static int step_seccomp_compile(struct jail *j)
{
        int r = jail_seccomp_compile(&j->seccomp);
        return r < 0 ? fail(j, STEP_SECCOMP_COMPILE, r, "compile seccomp filter") : 0;
}

static int step_rlimits(struct jail *j)
{
        int r = jail_proc_rlimits();
        return r < 0 ? fail(j, STEP_RLIMITS, r, "setrlimit") : 0;
}

static int step_private_mounts(struct jail *j)
{
        int r = jail_mount_upper_host(j->spec);
        if (r < 0)
                return fail(j, STEP_PRIVATE_MOUNTS, r, "the upper's file system on the host");
        r = jail_mount_private_ns();
        return r < 0 ? fail(j, STEP_PRIVATE_MOUNTS, r, "private mount namespace") : 0;
}

/* Steps 1-11 (jailer/README.md), in order (11 inside step_start); the child runs 12-24 from
 * step_clone. */
static int run_parent(struct jail *j, int spec_fd)
{
        int r;
        if ((r = step_read_spec(j, spec_fd)) < 0 || (r = step_seccomp_compile(j)) < 0 ||
            (r = step_rlimits(j)) < 0 || (r = step_cgroups(j)) < 0 || (r = step_socket(j)) < 0 ||
            (r = step_private_mounts(j)) < 0 || (r = step_clone(j)) < 0 ||
            (r = step_id_map(j)) < 0 || (r = step_mount_root(j)) < 0 || (r = step_start(j)) < 0)
                return r;
        return 0;
}

/* Exactly one JSON line on the status fd. */
static void write_status(const struct jail *j, int ok, int status_fd)
{
        cJSON *o = cJSON_CreateObject();
        if (!o)
                return;
        cJSON_AddBoolToObject(o, "ok", ok);
        if (ok) {
                cJSON_AddNumberToObject(o, "pid", j->pid);
        } else {
                cJSON_AddStringToObject(o, "step", step_names[j->failed_step]);
                cJSON_AddNumberToObject(o, "errno", j->error);
                cJSON_AddStringToObject(o, "message", j->message);
        }
        char *line = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (!line)
                return;
        size_t n = strlen(line);
        char *nl = realloc(line, n + 2);
        if (nl) {
                line = nl;
                memcpy(line + n, "\n", 2);
                n++;
        }
        if (write_full(status_fd, line, n) < 0)
                log_error("cannot write status line");
        free(line);
}

/* Failure: kill and reap the half-made sandbox, remove its cgroups and socket. The mounts
 * live only in our private mount namespace and the child's: they die with us. */
static void undo(struct jail *j)
{
        if (j->pid > 0) {
                (void)kill(j->pid, SIGKILL);
                while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
                j->pid = 0;
        }
        int r = jail_cgroup_remove(&j->cgroup);
        if (r < 0)
                log_warning_errno(r, "removing cgroups: %m");
        if (j->egress_made && (r = jail_net_egress_remove(j->spec->egress)) < 0)
                log_warning_errno(r, "removing %s: %m", j->spec->egress->host_if);
        if (j->socket_made)
                (void)unlink(j->spec->socket);
}

int jail_run(int spec_fd, int status_fd)
{
        struct jail j = {.listen_fd = -EBADF, .sync_fd = -EBADF};
        int r;
        /* A closed status pipe must not kill us with SIGPIPE before cleanup; the child resets
         * every disposition before exec. */
        signal(SIGPIPE, SIG_IGN);
        /* Modes of the dirs and files we create must not depend on sbxd's umask (often 077). */
        umask(022);

        r = run_parent(&j, spec_fd);

        if (r < 0) {
                log_error("step %s failed: %s", step_names[j.failed_step], j.message);
                if (j.spec)
                        undo(&j);
        }
        write_status(&j, r >= 0, status_fd);
        safe_close(j.listen_fd);
        safe_close(j.sync_fd);
        jail_seccomp_done(&j.seccomp);
        jail_cgroup_done(&j.cgroup);
        sbx_jail_spec_free(j.spec);
        return r < 0 ? 1 : 0;
}
