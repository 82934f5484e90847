/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stand-in for sbx-agent in test-jailer-run: accepts one connection on SBX_AGENT_LISTEN_FD and
 * writes "key value" lines describing what it sees from inside the sandbox, then exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static void status_field(FILE *out, const char *name)
{
        FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        size_t l = strlen(name);
        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, name, l) == 0 && line[l] == ':') {
                        char *v = line + l + 1;
                        v += strspn(v, " \t");
                        fprintf(out, "%s %s", name, v);
                }
        if (f)
                fclose(f);
}

/* One line of /proc/sys/user (the limits of this user namespace), or -1. */
static long user_limit(const char *name)
{
        char path[128], line[64];
        snprintf(path, sizeof(path), "/proc/sys/user/%s", name);
        FILE *f = fopen(path, "re");
        long v = -1;
        if (f && fgets(line, sizeof(line), f))
                v = strtol(line, NULL, 10);
        if (f)
                fclose(f);
        return v;
}

static int try_create(const char *path)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0)
                return errno;
        close(fd);
        return 0;
}

int main(void)
{
        const char *lfd = getenv("SBX_AGENT_LISTEN_FD");
        int c = accept4(lfd ? atoi(lfd) : 3, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
                return 1;
        FILE *out = fdopen(c, "w");
        if (!out)
                return 1;
        char host[256] = "";
        gethostname(host, sizeof(host));
        fprintf(out, "pid %d\nuid %d\nhostname %s\n", (int)getpid(), (int)getuid(), host);
        fprintf(out, "id %s\n", getenv("SBX_SANDBOX_ID") ? getenv("SBX_SANDBOX_ID") : "");
        fprintf(out, "foo %s\n", getenv("FOO") ? getenv("FOO") : "");
        status_field(out, "NoNewPrivs");
        status_field(out, "Seccomp");
        status_field(out, "CapBnd");
        int nfds = 0;
        for (int fd = 0; fd < 1024; fd++)
                nfds += fcntl(fd, F_GETFD) >= 0;
        fprintf(out, "open_fds %d\n", nfds); /* 0 1 2 3 + the accepted connection */
        fprintf(out, "write_usr %d\n", try_create("/usr/sbx-test"));
        fprintf(out, "write_root %d\n", try_create("/sbx-test"));
        fprintf(out, "write_exe %d\n", try_create("/.sbx/sbx-agent"));
        struct stat st;
        fprintf(out, "etc_owner %d\n", stat("/etc/passwd", &st) == 0 ? (int)st.st_uid : -1);
        /* read-only binds of host directories map host root alone (jail_mount_root) */
        if (stat("/usr", &st) == 0)
                fprintf(out, "usr_owner %d:%d\n", (int)st.st_uid, (int)st.st_gid);
        if (stat("/sbx-bind/f", &st) == 0)
                fprintf(out, "bind_owner %d:%d\n", (int)st.st_uid, (int)st.st_gid);
        fprintf(out, "dev_null %d\n", open("/dev/null", O_RDWR | O_CLOEXEC) >= 0);
        fprintf(out, "proc_1 %d\n", access("/proc/1/status", R_OK) == 0);
        fprintf(out, "max_user_namespaces %ld\n", user_limit("max_user_namespaces"));
        fprintf(out, "max_net_namespaces %ld\n", user_limit("max_net_namespaces"));
        fprintf(out, "max_inotify_instances %ld\n", user_limit("max_inotify_instances"));
        fprintf(out, "max_inotify_watches %ld\n", user_limit("max_inotify_watches"));
        struct rlimit rl;
        fprintf(out, "sigpending %lld\n",
                getrlimit(RLIMIT_SIGPENDING, &rl) == 0 ? (long long)rl.rlim_max : -1LL);
        fprintf(out, "msgqueue %lld\n",
                getrlimit(RLIMIT_MSGQUEUE, &rl) == 0 ? (long long)rl.rlim_max : -1LL);
        fprintf(out, "end\n");
        fclose(out);
        return 0;
}
