/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-attach.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "jail-ca.h"
#include "jail-error.h"
#include "jail-mount.h"
#include "jail-net.h"
#include "jail-spec.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "missing-syscalls.h"

/* The pid behind a pidfd (its fdinfo's "Pid:" line); -ESRCH once it has exited. */
static int pidfd_pid(int pidfd, pid_t *ret)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_all(fd, 4096, &text, &len);
        if (r < 0)
                return r;
        const char *p = strstr(text, "\nPid:");
        long pid = p ? strtol(p + 5, NULL, 10) : 0;
        if (pid <= 0)
                return pid < 0 ? -ESRCH : -EINVAL;
        *ret = (pid_t)pid;
        return 0;
}

static int read_spec(int spec_fd, uint32_t *ret_uid, struct sbx_jail_egress **ret_e,
                     const char **msg)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_all(spec_fd, JAIL_ATTACH_SPEC_MAX, &text, &len);
        if (r < 0)
                return r;
        _cleanup_json_ cJSON *o = cJSON_ParseWithLength(text, len);
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "uid_base");
        if (!cJSON_IsObject(o) || !cJSON_IsNumber(u) || u->valuedouble < SBX_JAIL_UID_BASE_MIN ||
            u->valuedouble > 4294967294.0 || u->valuedouble != (double)(uint32_t)u->valuedouble) {
                *msg = "attach spec: {\"uid_base\": N, \"egress\": {...}} expected";
                return -EINVAL;
        }
        r = sbx_jail_egress_decode(o, ret_e, msg);
        if (r >= 0 && !*ret_e) {
                *msg = "attach spec: egress is missing";
                r = -EINVAL;
        }
        if (r >= 0)
                *ret_uid = (uint32_t)u->valuedouble;
        return r;
}

/* The sandbox's net namespace (setns through the pidfd, then its own nsfs entry) and root. */
static int open_sandbox(int pidfd, int *ret_ns, int *ret_root, pid_t *ret_pid)
{
        _cleanup_close_ int host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (host_ns < 0)
                return jail_errorf(-errno, "open the host's net namespace: %m");
        if (setns(pidfd, CLONE_NEWNET) < 0)
                return jail_errorf(-errno, "setns into the sandbox's net namespace: %m");
        int ns = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        int saved = errno;
        if (setns(host_ns, CLONE_NEWNET) < 0) {
                safe_close(ns);
                return jail_errorf(-errno, "setns back into the host's net namespace: %m");
        }
        _cleanup_close_ int nsfd = ns;
        if (nsfd < 0)
                return jail_errorf(-saved, "the sandbox's net namespace: %m");
        pid_t pid = 0;
        int r = pidfd_pid(pidfd, &pid);
        if (r < 0)
                return jail_errorf(r, "the sandbox's agent: %m");
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
        _cleanup_close_ int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return jail_errorf(-errno, "%s: %m", path);
        /* still the same process: the root opened above is the sandbox's, not a recycled pid's */
        if (pidfd_send_signal(pidfd, 0, NULL, 0) < 0)
                return jail_errorf(-errno, "the sandbox's agent: %m");
        *ret_ns = TAKE_FD(nsfd);
        *ret_root = TAKE_FD(root);
        *ret_pid = pid;
        return 0;
}

/* As a start's status line: {"ok":true,"pid":<the agent>} or the failure. */
static void status(int fd, int r, const char *step, pid_t pid)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o)
                return;
        cJSON_AddBoolToObject(o, "ok", r >= 0);
        if (r >= 0)
                cJSON_AddNumberToObject(o, "pid", pid);
        if (r < 0) {
                const char *m = jail_error_message();
                cJSON_AddStringToObject(o, "step", step);
                cJSON_AddNumberToObject(o, "errno", -r);
                cJSON_AddStringToObject(o, "message", m ? m : strerror(-r));
        }
        _cleanup_free_ char *line = cJSON_PrintUnformatted(o);
        if (line && (write_full(fd, line, strlen(line)) < 0 || write_full(fd, "\n", 1) < 0))
                log_error("cannot write status line");
}

int jail_attach_run(int spec_fd, int status_fd, int pidfd)
{
        signal(SIGPIPE, SIG_IGN);
        umask(022);
        uint32_t uid = 0;
        _cleanup_free_ struct sbx_jail_egress *e = NULL;
        const char *msg = NULL;
        int r = read_spec(spec_fd, &uid, &e, &msg);
        if (r < 0) {
                if (msg)
                        jail_errorf(r, "invalid spec: %s", msg);
                status(status_fd, r, "read-spec", 0);
                return 1;
        }
        _cleanup_close_ int ns = -EBADF, root = -EBADF;
        pid_t pid = 0;
        r = open_sandbox(pidfd, &ns, &root, &pid);
        if (r >= 0)
                r = jail_net_egress_ns(e, ns);
        /* the files as sandbox root writes them: its upper may be an idmapped pool subvolume */
        int bits = r >= 0 ? jail_fs_become(uid) : -EBADF;
        if (r >= 0 && bits < 0)
                r = jail_errorf(bits, "taking sandbox root's file-system ids: %m");
        if (r >= 0 && (r = jail_mount_write_resolv_conf(root, uid, e->gw4)) < 0) {
                jail_errorf(r, "writing the sandbox's /etc/resolv.conf: %m");
                (void)jail_net_egress_remove(e);
        }
        if (r >= 0 && (r = jail_ca_install(root, uid, e->ca_pem)) < 0) {
                jail_errorf(r, "adding the egress CA to " SBX_JAIL_CA_BUNDLE ": %m");
                (void)jail_net_egress_remove(e);
        }
        if (bits >= 0)
                (void)jail_fs_restore(bits);
        if (r < 0)
                log_error("attach-egress failed: %s",
                          jail_error_message() ? jail_error_message() : strerror(-r));
        status(status_fd, r, "attach-egress", pid);
        return r < 0 ? 1 : 0;
}
