/* SPDX-License-Identifier: Apache-2.0 */
/*
 * End to end, as root: build the base-host template, start sbx-jailer with jail-test-agent as the
 * agent, check the sandbox from the host and from inside (the agent's report on its socket),
 * tear it down with common/cgroup-util and check nothing is left. Skipped (77) when not root.
 *   test-jailer-run SBX_JAILER TEST_AGENT TEMPLATES_BASE_BUILD_SH
 */
#include "cgroup-util.h"
#include "fd-util.h"
#include "macros.h"
#include "unit.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *jailer, *agent;
static char tmp[] = "/tmp/sbx-jailer-test.XXXXXX";
static char tpl[256];

/* Runs the jailer on spec; returns the parsed status line (caller frees) or NULL. */
static cJSON *run_jailer(const char *spec)
{
        int sp[2], st[2];
        if (pipe2(sp, O_CLOEXEC) < 0 || pipe2(st, O_CLOEXEC) < 0)
                return NULL;
        if (write_full(sp[1], spec, strlen(spec)) < 0)
                return NULL;
        close(sp[1]);
        pid_t pid = fork();
        if (pid == 0) {
                /* Park above 4 first: dup2(fd, fd) would keep O_CLOEXEC. */
                int a = fcntl(sp[0], F_DUPFD, 10), b = fcntl(st[1], F_DUPFD, 10);
                if (a < 0 || b < 0 || dup2(a, 3) < 0 || dup2(b, 4) < 0)
                        _exit(127);
                execl(jailer, "sbx-jailer", "--spec-fd", "3", "--status-fd", "4", (char *)NULL);
                _exit(127);
        }
        close(sp[0]);
        close(st[1]);
        _cleanup_free_ char *line = NULL;
        int r = read_all(st[0], 4096, &line, NULL);
        close(st[0]);
        int status;
        waitpid(pid, &status, 0);
        if (r < 0 || !strchr(line, '\n'))
                return NULL;
        return cJSON_Parse(line);
}

/* The id the kernel shows for an unmapped one (/proc/sys/kernel/overflowuid, 65534 usually). */
static int overflow_id(const char *which)
{
        char p[64], buf[32] = "";
        snprintf(p, sizeof(p), "/proc/sys/kernel/%s", which);
        FILE *f = fopen(p, "re");
        if (f) {
                if (!fgets(buf, sizeof(buf), f))
                        buf[0] = 0;
                fclose(f);
        }
        return buf[0] ? atoi(buf) : 65534;
}

static void spec_for(char *buf, size_t size, const char *id, const char *agent_path)
{
        snprintf(buf, size,
                 "{\"id\":\"%s\",\"rootfs\":\"%s/%s/rootfs\",\"socket\":\"%s/%s/agent.sock\","
                 "\"layers\":[\"%s/layer\"],"
                 "\"binds\":[{\"source\":\"/usr\",\"target\":\"/usr\",\"readonly\":true},"
                 "{\"source\":\"%s/hostdir\",\"target\":\"/sbx-bind\",\"readonly\":true}],"
                 "\"agent\":\"%s\",\"uid_base\":1048576,\"uid_count\":65536,"
                 "\"cgroup\":\"sbxtest/%s\",\"memory_bytes\":268435456,\"pids_max\":64,"
                 "\"cpu_quota_us\":50000,\"cpu_period_us\":100000,\"disk_bytes\":16777216,"
                 "\"env\":{\"FOO\":\"bar\",\"SBX_SANDBOX_ID\":\"spoofed\"}}",
                 id, tmp, id, tmp, id, tpl, tmp, agent_path, id);
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/%s", tmp, id);
        mkdir(dir, 0700);
        snprintf(dir, sizeof(dir), "%s/%s/rootfs", tmp, id);
        mkdir(dir, 0700);
}

/* Mounts of the host's mount table that involve this test's directory (a mount point or a
 * source under it): what a jailer could leave behind. Other mounts on the host come and go
 * with whatever else runs (other unit tests run in parallel), so they are not counted. */
static int count_our_mounts(void)
{
        _cleanup_close_ int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        _cleanup_free_ char *buf = NULL;
        if (fd < 0 || read_all(fd, 1 << 20, &buf, NULL) < 0)
                return -1;
        int n = 0;
        for (char *line = buf, *end; *line; line = end + 1) {
                end = strchrnul(line, '\n');
                char save = *end;
                *end = 0;
                if (strstr(line, tmp))
                        n++;
                *end = save;
                if (!save)
                        break;
        }
        return n;
}

static int cgroup_exists(const char *ctrl, const char *id)
{
        char p[256];
        snprintf(p, sizeof(p), "/sys/fs/cgroup/%s/sbxtest/%s", ctrl, id);
        return access(p, F_OK) == 0;
}

/* "key value" lookup in the agent's report. */
static const char *field(const char *report, const char *key, char *out, size_t size)
{
        char pat[64];
        snprintf(pat, sizeof(pat), "\n%s ", key);
        const char *p = strstr(report, pat);
        if (!p)
                return "";
        p += strlen(pat);
        snprintf(out, size, "%.*s", (int)strcspn(p, "\n"), p);
        return out;
}

/* Gone, or a zombie waiting for its new parent (init or a subreaper) to reap it. */
static int pid_dead(pid_t pid)
{
        char path[64], buf[512];
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        for (int i = 0; i < 200; i++) {
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        return 1;
                ssize_t n = read(fd, buf, sizeof(buf) - 1);
                buf[n > 0 ? n : 0] = 0;
                const char *st = strrchr(buf, ')');
                if (st && st[1] == ' ' && (st[2] == 'Z' || st[2] == 'X'))
                        return 1;
                usleep(10000);
        }
        return 0;
}

static void check_ns_differ(pid_t pid)
{
        const char *ns[] = {"user", "pid", "mnt", "net", "ipc", "uts", "cgroup"};
        for (size_t i = 0; i < ELEMENTSOF(ns); i++) {
                char a[64], b[64], la[64] = "", lb[64] = "";
                snprintf(a, sizeof(a), "/proc/%d/ns/%s", (int)pid, ns[i]);
                snprintf(b, sizeof(b), "/proc/self/ns/%s", ns[i]);
                CHECK(readlink(a, la, sizeof(la) - 1) > 0 && readlink(b, lb, sizeof(lb) - 1) > 0);
                CHECK(strcmp(la, lb) != 0);
        }
}

/* The uid that owns pid's user namespace (NS_GET_OWNER_UID, as seen from here), or -1. */
static long userns_owner(pid_t pid)
{
        char path[64];
        uid_t owner;
        snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || ioctl(fd, NS_GET_OWNER_UID, &owner) < 0)
                return -1;
        return (long)owner;
}

/* The host's per-user limit /proc/sys/user/<name>, 3/4 of it as the jailer sets inside. */
static void uid_share(const char *name, char *out, size_t size)
{
        char path[128];
        _cleanup_free_ char *buf = NULL;
        snprintf(path, sizeof(path), "/proc/sys/user/%s", name);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        long v = fd >= 0 && read_all(fd, 64, &buf, NULL) >= 0 ? strtol(buf, NULL, 10) : 0;
        snprintf(out, size, "%lld", (long long)v * 3 / 4);
}

static void test_good(void)
{
        char spec[4096], v[128];
        int mounts = count_our_mounts();
        spec_for(spec, sizeof(spec), "good1", agent);
        cJSON *st = run_jailer(spec);
        CHECK(st && cJSON_IsTrue(cJSON_GetObjectItem(st, "ok")));
        pid_t pid = st ? (pid_t)cJSON_GetNumberValue(cJSON_GetObjectItem(st, "pid")) : 0;
        cJSON_Delete(st);
        if (pid <= 0)
                return;
        check_ns_differ(pid);
        /* Owned by the sandbox's host uid: its kernel counters are charged to it, not root. */
        CHECK_EQ_INT(userns_owner(pid), 1048576);
        CHECK_EQ_INT(count_our_mounts(), mounts); /* nothing on the host */
        CHECK(cgroup_exists("unified", "good1") && cgroup_exists("memory", "good1") &&
              cgroup_exists("pids", "good1") && cgroup_exists("cpu", "good1"));

        /* Ask the agent what it sees. */
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/good1/agent.sock", tmp);
        struct stat sst;
        CHECK(stat(sa.sun_path, &sst) == 0 && (sst.st_mode & 0777) == 0600);
        CHECK(connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0);
        _cleanup_free_ char *report = NULL;
        char *raw = NULL;
        CHECK(read_all(s, 65536, &raw, NULL) == 0);
        close(s);
        if (raw && asprintf(&report, "\n%s", raw) < 0)
                report = NULL;
        free(raw);
        if (!report)
                return;
        CHECK_STREQ(field(report, "pid", v, sizeof(v)), "1");
        CHECK_STREQ(field(report, "uid", v, sizeof(v)), "0");
        CHECK_STREQ(field(report, "hostname", v, sizeof(v)), "good1");
        CHECK_STREQ(field(report, "id", v, sizeof(v)), "good1");
        CHECK_STREQ(field(report, "foo", v, sizeof(v)), "bar");
        CHECK_STREQ(field(report, "NoNewPrivs", v, sizeof(v)), "1");
        CHECK_STREQ(field(report, "Seccomp", v, sizeof(v)), "2");
        CHECK_STREQ(field(report, "CapBnd", v, sizeof(v)), "00000000000001fb");
        CHECK_STREQ(field(report, "open_fds", v, sizeof(v)), "5");
        CHECK_STREQ(field(report, "write_usr", v, sizeof(v)), "30"); /* EROFS */
        CHECK_STREQ(field(report, "write_root", v, sizeof(v)), "0"); /* the upper */
        CHECK(strcmp(field(report, "write_exe", v, sizeof(v)), "0") != 0);
        CHECK_STREQ(field(report, "etc_owner", v, sizeof(v)), "0"); /* idmapped layer */
        /* A read-only bind of a host directory maps host root alone: a host user's file there is
         * nobody's (out of reach of sandbox root's capabilities), host root's stays root's. */
        char nobody[32];
        snprintf(nobody, sizeof(nobody), "%d:%d", overflow_id("overflowuid"),
                 overflow_id("overflowgid"));
        CHECK_STREQ(field(report, "bind_owner", v, sizeof(v)), nobody);
        CHECK_STREQ(field(report, "usr_owner", v, sizeof(v)), "0:0");
        CHECK_STREQ(field(report, "dev_null", v, sizeof(v)), "1");
        CHECK_STREQ(field(report, "proc_1", v, sizeof(v)), "1");
        /* The limits of the sandbox's own user namespace (jail-ucount.c). */
        char want[32];
        CHECK_STREQ(field(report, "max_user_namespaces", v, sizeof(v)), "0");
        CHECK_STREQ(field(report, "max_net_namespaces", v, sizeof(v)), "0");
        uid_share("max_inotify_instances", want, sizeof(want));
        CHECK_STREQ(field(report, "max_inotify_instances", v, sizeof(v)), want);
        uid_share("max_inotify_watches", want, sizeof(want));
        CHECK_STREQ(field(report, "max_inotify_watches", v, sizeof(v)), want);
        CHECK_STREQ(field(report, "sigpending", v, sizeof(v)), "16384");
        CHECK_STREQ(field(report, "msgqueue", v, sizeof(v)), "819200");
        CHECK_STREQ(field(report, "end", v, sizeof(v)), "");

        /* Teardown as sbxd does it; nothing may remain. */
        CHECK_EQ_INT(cgroup_destroy("sbxtest/good1", 5000), 0);
        CHECK(!cgroup_exists("unified", "good1") && !cgroup_exists("memory", "good1") &&
              !cgroup_exists("pids", "good1") && !cgroup_exists("cpu", "good1") &&
              !cgroup_exists("cpuacct", "good1") && !cgroup_exists("freezer", "good1"));
        CHECK(pid_dead(pid));
        CHECK_EQ_INT(count_our_mounts(), mounts);
}

static void test_child_failure(void)
{
        char spec[4096], bad[512];
        snprintf(bad, sizeof(bad), "%s/not-executable", tmp);
        int bfd = open(bad, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        CHECK(bfd >= 0 && write_full(bfd, "not a program\n", 14) == 0);
        safe_close(bfd);
        spec_for(spec, sizeof(spec), "fail1", bad);
        cJSON *st = run_jailer(spec);
        CHECK(st && cJSON_IsFalse(cJSON_GetObjectItem(st, "ok")));
        CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(st, "step")), "exec");
        CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "errno")), EACCES);
        cJSON_Delete(st);
        CHECK(!cgroup_exists("unified", "fail1") && !cgroup_exists("memory", "fail1"));
        char sock[512];
        snprintf(sock, sizeof(sock), "%s/fail1/agent.sock", tmp);
        CHECK(access(sock, F_OK) < 0);
}

#define EGRESS_SPEC                                                                                \
        ",\"egress\":{\"host_if\":\"sbxe4090\",\"addr4\":\"10.200.63.234/30\","                    \
        "\"gw4\":\"10.200.63.233\",\"addr6\":\"fd73:6278:6567:ffa::2/64\","                        \
        "\"gw6\":\"fd73:6278:6567:ffa::1\"}}"

/* spec with the egress member of slot 4090 */
static void egress_spec_for(char *buf, size_t size, const char *id, const char *agent_path)
{
        spec_for(buf, size, id, agent_path);
        size_t l = strlen(buf);
        snprintf(buf + l - 1, size - l + 1, "%s", EGRESS_SPEC);
}

static char *slurp_buf; /* the last file slurp() read */
static const char *slurp(const char *path)
{
        free(slurp_buf);
        slurp_buf = NULL;
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read_all(fd, 1 << 20, &slurp_buf, NULL) < 0)
                return "";
        return slurp_buf;
}

/* The link (jailer/README.md "Egress"): both ends, their addresses and routes, the sandbox's
 * resolv.conf; then the pair gone with a failed start, the child's failure reported. */
static void test_egress(void)
{
        char spec[4096], path[128];
        egress_spec_for(spec, sizeof(spec), "egress1", agent);
        cJSON *st = run_jailer(spec);
        CHECK(st && cJSON_IsTrue(cJSON_GetObjectItem(st, "ok")));
        pid_t pid = st ? (pid_t)cJSON_GetNumberValue(cJSON_GetObjectItem(st, "pid")) : 0;
        cJSON_Delete(st);
        if (pid <= 0)
                return;
        CHECK(if_nametoindex("sbxe4090") > 0);
        CHECK(strstr(slurp("/proc/sys/net/ipv4/conf/sbxe4090/rp_filter"), "1") != NULL);
        snprintf(path, sizeof(path), "/proc/%d/net/dev", (int)pid);
        CHECK(strstr(slurp(path), "eth0:") != NULL);
        snprintf(path, sizeof(path), "/proc/%d/net/if_inet6", (int)pid);
        CHECK(strstr(slurp(path), "fd73627865670ffa0000000000000002") != NULL);
        snprintf(path, sizeof(path), "/proc/%d/net/route", (int)pid);
        /* default route (destination 0) via 10.200.63.233, little-endian hex */
        CHECK(strstr(slurp(path), "eth0\t00000000\tE93FC80A") != NULL);
        snprintf(path, sizeof(path), "/proc/%d/root/etc/resolv.conf", (int)pid);
        CHECK_STREQ(slurp(path), "nameserver 10.200.63.233\noptions edns0\n");
        /* the host end's addresses */
        CHECK(strstr(slurp("/proc/net/if_inet6"), "fd73627865670ffa0000000000000001") != NULL);
        CHECK_EQ_INT(cgroup_destroy("sbxtest/egress1", 5000), 0);
        CHECK(pid_dead(pid));
        /* the pair goes with the sandbox's net namespace (sbxd also deletes it at once) */
        for (int i = 0; i < 200 && if_nametoindex("sbxe4090") > 0; i++)
                usleep(10000);
        CHECK(if_nametoindex("sbxe4090") == 0);

        /* a child that fails: its step is reported, not the link's, and the link is gone */
        char bad[512];
        snprintf(bad, sizeof(bad), "%s/not-executable", tmp);
        egress_spec_for(spec, sizeof(spec), "egress2", bad);
        st = run_jailer(spec);
        CHECK(st && cJSON_IsFalse(cJSON_GetObjectItem(st, "ok")));
        CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(st, "step")), "exec");
        cJSON_Delete(st);
        CHECK(if_nametoindex("sbxe4090") == 0);
        CHECK(!cgroup_exists("unified", "egress2"));
}

static void test_bad_spec(void)
{
        cJSON *st = run_jailer("{\"id\":\"../x\"}");
        CHECK(st && cJSON_IsFalse(cJSON_GetObjectItem(st, "ok")));
        CHECK_STREQ(cJSON_GetStringValue(cJSON_GetObjectItem(st, "step")), "read-spec");
        CHECK_EQ_INT(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "errno")), EINVAL);
        cJSON_Delete(st);
}

int main(int argc, char **argv)
{
        if (argc != 4)
                return 2;
        if (geteuid() != 0) {
                fprintf(stderr, "test-jailer-run: needs root, skipped\n");
                return 77;
        }
        static char jbuf[4096], abuf[4096];
        jailer = realpath(argv[1], jbuf);
        agent = realpath(argv[2], abuf);
        if (!jailer || !agent)
                return 2;
        if (!mkdtemp(tmp))
                return 1;
        snprintf(tpl, sizeof(tpl), "%s/tpl", tmp);
        char cmd[1024];
        snprintf(cmd, sizeof(cmd), "'%s' '%s'", argv[3], tpl);
        CHECK_EQ_INT(system(cmd), 0);
        /* a host directory with a host user's file, bound read-only (spec_for) */
        char hostdir[300], hostfile[320];
        snprintf(hostdir, sizeof(hostdir), "%s/hostdir", tmp);
        snprintf(hostfile, sizeof(hostfile), "%s/f", hostdir);
        CHECK_EQ_INT(mkdir(hostdir, 0755), 0);
        CHECK_EQ_INT(close(open(hostfile, O_CREAT | O_WRONLY | O_CLOEXEC, 0600)), 0);
        CHECK_EQ_INT(chown(hostfile, 4321, 4321), 0);

        /* cgroup-util refuses names that climb out, and a missing group is success. */
        CHECK_EQ_INT(cgroup_destroy("sbxtest/../../x", 100), -EINVAL);
        CHECK_EQ_INT(cgroup_destroy("/sbxtest/x", 100), -EINVAL);
        CHECK_EQ_INT(cgroup_destroy("sbxtest/does-not-exist", 100), 0);

        umask(077); /* like a careful sbxd: the jailer must not inherit it */
        test_good();
        test_child_failure();
        test_egress();
        test_bad_spec();

        (void)cgroup_remove("sbxtest");
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
        if (system(cmd) != 0)
                fprintf(stderr, "test-jailer-run: could not remove %s\n", tmp);
        return unit_finish("test-jailer-run");
}
