/* SPDX-License-Identifier: Apache-2.0 */
/*
 * File work with a user's rights (core/users.c, envd/dirs.c, core/fs-check.c): switched to a
 * user, the thread has that user's rights and no capability (a directory 0700 to another uid
 * stays closed), root exactly root's six (agent_user_caps); the parents envd creates for a
 * user stay within what the user or a capability-less root may do; the agent's own /proc
 * entries are refused. Needs root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/fs-check.h"
#include "core/users.h"
#include "envd/dirs.h"
#include "macros.h"
#include "unit.h"

#define OTHER_UID 54321 /* owns the "host" directory, as an unused host uid would */
#define USER_UID  1000

static char base[64];

static gid_t root_gids[] = {0}, user_gids[] = {USER_UID};
static const struct agent_user root_user = {
    .name = (char *)"root", .uid = 0, .gid = 0, .n_groups = 1, .groups = root_gids};
static const struct agent_user plain_user = {
    .name = (char *)"user", .uid = USER_UID, .gid = USER_UID, .n_groups = 1, .groups = user_gids};

static char *at(const char *rel)
{
        static char buf[4][256];
        static int i;
        i = (i + 1) % 4;
        snprintf(buf[i], sizeof(buf[i]), "%s/%s", base, rel);
        return buf[i];
}

/* The thread's effective and permitted sets (first 32 bits are all this test needs to tell). */
static void caps(uint64_t *eff, uint64_t *perm)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[2] = {0};
        CHECK_EQ_INT(syscall(SYS_capget, &h, d), 0);
        *eff = d[0].effective | (uint64_t)d[1].effective << 32;
        *perm = d[0].permitted | (uint64_t)d[1].permitted << 32;
}

static int try_open(const char *path)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        close(fd);
        return 0;
}

static void setup(void)
{
        snprintf(base, sizeof(base), "/tmp/sbx-fs-creds-XXXXXX");
        CHECK(mkdtemp(base) != NULL);
        CHECK_EQ_INT(chmod(base, 0755), 0);
        /* a directory 0700 to another uid, like a host directory seen through /usr */
        CHECK_EQ_INT(mkdir(at("other"), 0700), 0);
        CHECK_EQ_INT(close(open(at("other/f"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
        CHECK_EQ_INT(chown(at("other/f"), OTHER_UID, OTHER_UID), 0);
        CHECK_EQ_INT(chown(at("other"), OTHER_UID, OTHER_UID), 0);
        /* root's own 0700 directory, and the user's */
        CHECK_EQ_INT(mkdir(at("rootonly"), 0700), 0);
        CHECK_EQ_INT(mkdir(at("mine"), 0700), 0);
        CHECK_EQ_INT(close(open(at("mine/f"), O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
        CHECK_EQ_INT(chown(at("mine/f"), USER_UID, USER_UID), 0);
        CHECK_EQ_INT(chown(at("mine"), USER_UID, USER_UID), 0);
}

static void test_become(void)
{
        uint64_t eff, perm, eff0, perm0;
        DIR *d;

        caps(&eff0, &perm0);
        CHECK(eff0 != 0 && eff0 == perm0);
        CHECK_EQ_INT(try_open(at("other/f")), 0); /* the agent itself: CAP_DAC_OVERRIDE */

        /* root: uid 0 with root's six capabilities, as a root shell has them */
        CHECK_EQ_INT(agent_user_caps(0), 0xdb); /* bits 0 1 3 4 6 7 */
        CHECK_EQ_INT(agent_user_caps(USER_UID), 0);
        CHECK_EQ_INT(agent_user_caps(65534), 0);
        CHECK_EQ_INT(agent_fs_become(&root_user), 0);
        caps(&eff, &perm);
        CHECK_EQ_INT(eff, agent_user_caps(0));
        CHECK_EQ_INT(perm, perm0);
        CHECK_EQ_INT(try_open(at("mine/f")), 0); /* the user's 0600 file: CAP_DAC_OVERRIDE */
        CHECK_EQ_INT(agent_fs_cap_raise(CAP_KILL), 0);
        caps(&eff, &perm);
        CHECK_EQ_INT(eff, (uint64_t)1 << CAP_KILL);
        CHECK_EQ_INT(agent_fs_cap_lower(), 0);
        caps(&eff, &perm);
        CHECK_EQ_INT(eff, agent_user_caps(0)); /* back to root's, not to none */
        /* (host files are out of its reach in a sandbox because their owners do not map into
         * the sandbox's user namespace; on this host every uid maps, so "other" is not.) */

        /* bare root: uid 0 without capabilities (envd/dirs.c's bound) */
        CHECK_EQ_INT(agent_fs_become_bare(&root_user), 0);
        caps(&eff, &perm);
        CHECK_EQ_INT(eff, 0);
        CHECK_EQ_INT(perm, perm0);
        CHECK_EQ_INT(try_open(at("other/f")), -EACCES);
        d = opendir(at("other"));
        CHECK(d == NULL && errno == EACCES);
        if (d)
                closedir(d);
        CHECK_EQ_INT(try_open(at("mine/f")), -EACCES);
        /* one capability for one operation, then none again */
        CHECK_EQ_INT(agent_fs_cap_raise(CAP_DAC_OVERRIDE), 0);
        caps(&eff, &perm);
        CHECK_EQ_INT(eff, (uint64_t)1 << CAP_DAC_OVERRIDE);
        CHECK_EQ_INT(try_open(at("other/f")), 0);
        CHECK_EQ_INT(agent_fs_cap_lower(), 0);
        CHECK_EQ_INT(try_open(at("other/f")), -EACCES);

        /* another user, switched to directly from root */
        CHECK_EQ_INT(agent_fs_become(&plain_user), 0);
        caps(&eff, &perm);
        CHECK_EQ_INT(eff, 0);
        CHECK_EQ_INT(try_open(at("mine/f")), 0);
        CHECK_EQ_INT(try_open(at("other/f")), -EACCES);

        agent_fs_restore();
        caps(&eff, &perm);
        CHECK_EQ_INT(eff, eff0);
        CHECK_EQ_INT(try_open(at("other/f")), 0);
        CHECK_EQ_INT((int)syscall(SYS_setfsuid, (uid_t)-1), 0);
}

/* ensure_dirs as u; the new directory's owner, or -errno. */
static long ensure(const struct agent_user *u, const char *rel, int *ret_created)
{
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int e;

        CHECK_EQ_INT(agent_fs_become(u), 0);
        e = agent_fs_ensure_dirs(u, at(rel), &fd);
        agent_fs_restore();
        if (e < 0)
                return e;
        *ret_created = e;
        CHECK_EQ_INT(fstat(fd, &st), 0);
        CHECK(S_ISDIR(st.st_mode));
        return (long)st.st_uid;
}

static void test_ensure_dirs(void)
{
        struct stat st;
        int created = -1;

        /* the user's own rights */
        CHECK_EQ_INT(ensure(&plain_user, "mine/a/b", &created), USER_UID);
        CHECK_EQ_INT(created, 1);
        CHECK_EQ_INT(ensure(&plain_user, "mine/a/b", &created), USER_UID);
        CHECK_EQ_INT(created, 0);
        /* envd's parity: where the sandbox's root could create it, owned by the user */
        CHECK_EQ_INT(ensure(&plain_user, "rootonly/sub/deeper", &created), USER_UID);
        CHECK_EQ_INT(created, 1);
        CHECK_EQ_INT(stat(at("rootonly/sub"), &st), 0);
        CHECK_EQ_INT(st.st_uid, USER_UID);
        CHECK_EQ_INT(st.st_mode & 07777, 0755);
        CHECK_EQ_INT(ensure(&root_user, "rootonly/r", &created), 0);
        /* neither the user nor a capability-less root may go there: nothing is made (root's
         * own capabilities are not lent to another user's parents) */
        CHECK_EQ_INT(ensure(&plain_user, "other/x/y", &created), -EACCES);
        CHECK_EQ_INT(lstat(at("other/x"), &st), -1);
        CHECK_EQ_INT(errno, ENOENT);
        /* root itself makes its directory in the user's 0700 one (CAP_DAC_OVERRIDE) */
        CHECK_EQ_INT(ensure(&root_user, "mine/r", &created), 0);
        CHECK_EQ_INT(created, 1);
        /* a file on the way */
        CHECK_EQ_INT(ensure(&plain_user, "mine/f/z", &created), -ENOTDIR);
}

struct waiter {
        int tid_w, go_r;
};

/* Says its thread id, then waits until told to end. */
static void *waiter(void *arg)
{
        struct waiter *w = arg;
        pid_t tid = (pid_t)syscall(SYS_gettid);
        char c;
        (void)!write(w->tid_w, &tid, sizeof(tid));
        (void)!read(w->go_r, &c, 1);
        return NULL;
}

static int check_open(const char *path)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC), e;
        if (fd < 0)
                return -errno;
        e = agent_fs_check_fd(fd);
        close(fd);
        return e;
}

static void test_own_proc(void)
{
        char path[64];
        int tp[2], gp[2];
        struct waiter w;
        pthread_t t;
        pid_t tid = 0;

        CHECK_EQ_INT(check_open("/proc/self/environ"), -EACCES);
        CHECK_EQ_INT(check_open("/proc/self/status"), -EACCES);
        CHECK_EQ_INT(check_open("/proc/thread-self/status"), -EACCES);
        CHECK_EQ_INT(check_open("/proc/cpuinfo"), 0);
        CHECK_EQ_INT(check_open("/proc/sys/kernel/ostype"), 0);
        CHECK_EQ_INT(check_open("/tmp"), 0);
        snprintf(path, sizeof(path), "/proc/%d/status", (int)getppid());
        CHECK_EQ_INT(check_open(path), 0); /* another process: the kernel decides */
        snprintf(path, sizeof(path), "/proc/%d/status", (int)getpid());
        CHECK_EQ_INT(check_open(path), -EACCES);
        /* one of our threads, by its own pid directory */
        CHECK_EQ_INT(pipe2(tp, O_CLOEXEC), 0);
        CHECK_EQ_INT(pipe2(gp, O_CLOEXEC), 0);
        w = (struct waiter){.tid_w = tp[1], .go_r = gp[0]};
        CHECK_EQ_INT(pthread_create(&t, NULL, waiter, &w), 0);
        CHECK_EQ_INT(read(tp[0], &tid, sizeof(tid)), (ssize_t)sizeof(tid));
        CHECK(tid != getpid());
        snprintf(path, sizeof(path), "/proc/%d/environ", (int)tid);
        CHECK_EQ_INT(check_open(path), -EACCES);
        CHECK_EQ_INT(write(gp[1], "x", 1), 1);
        pthread_join(t, NULL);
        for (int i = 0; i < 2; i++)
                close(tp[i]), close(gp[i]);

        CHECK_EQ_INT(agent_fs_check_path("/proc/self", true), -EACCES);
        CHECK_EQ_INT(agent_fs_check_path("/proc/self/fd/0", false), -EACCES);
        CHECK_EQ_INT(agent_fs_check_path("/proc/self/fd", true), -EACCES);
        CHECK_EQ_INT(agent_fs_check_path("/proc/self/cwd/tmp", true), -ELOOP);
        CHECK_EQ_INT(agent_fs_check_path("/proc", true), 0);
        CHECK_EQ_INT(agent_fs_check_path(base, true), 0);
        CHECK_EQ_INT(agent_fs_check_path(at("nope"), true), -ENOENT);
}

static void cleanup(void)
{
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
        CHECK_EQ_INT(system(cmd), 0);
}

int main(void)
{
        if (geteuid() != 0) {
                fprintf(stderr, "not root: skipping the credential tests\n");
                test_own_proc();
                return unit_finish("test-agent-fs-creds");
        }
        setup();
        test_become();
        test_ensure_dirs();
        test_own_proc();
        cleanup();
        return unit_finish("test-agent-fs-creds");
}
