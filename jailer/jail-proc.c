/* SPDX-License-Identifier: Apache-2.0 */
#include "jail-proc.h"

#include "macros.h"
#include "missing-syscalls.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/* What the agent holds inside its user namespace, for its whole life (jailer/README.md step
 * 20 says what each is for): sandbox root's six file and user capabilities, which it acts
 * with and hands to root's processes (guest-agent/core/users.h agent_user_caps()), plus
 * CAP_KILL (signals to every user's processes) and CAP_SETPCAP (shedding the bounding set of
 * each process it starts). Nothing else: no CAP_SYS_ADMIN (no mounts or namespace tricks
 * even past seccomp, CVE-2022-0492), none of Docker's NET_BIND_SERVICE, SYS_CHROOT,
 * AUDIT_WRITE, SETFCAP or DAC_READ_SEARCH, which nothing of the agent's uses. */
static const cap_value_t agent_caps[] = {
    CAP_CHOWN,  CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID,
    CAP_SETUID, CAP_SETGID,       CAP_KILL,   CAP_SETPCAP,
};

/* cur = max = value; without CAP_SYS_RESOURCE a hard limit cannot be raised: take
 * min(value, the current hard limit) then. */
static int set_limit(int resource, rlim_t value)
{
        struct rlimit rl = {value, value};
        if (setrlimit(resource, &rl) == 0)
                return 0;
        if (errno != EPERM || getrlimit(resource, &rl) < 0)
                return -errno;
        rl.rlim_cur = rl.rlim_max = MIN(rl.rlim_max, value);
        return setrlimit(resource, &rl) < 0 ? -errno : 0;
}

int jail_proc_rlimits(void)
{
        int r;
        if ((r = set_limit(RLIMIT_NOFILE, JAIL_NOFILE)) < 0 || (r = set_limit(RLIMIT_CORE, 0)) < 0)
                return r;
        /* The ucount rlimits: the soft value at clone becomes the user namespace's own maximum
         * (the sandbox's share of the count of its host uid, jail-ucount.h) and each process's
         * limit inside. */
        if ((r = set_limit(RLIMIT_MSGQUEUE, JAIL_MSGQUEUE_BYTES)) < 0 ||
            (r = set_limit(RLIMIT_SIGPENDING, JAIL_SIGPENDING)) < 0 ||
            (r = set_limit(RLIMIT_MEMLOCK, JAIL_MEMLOCK_BYTES)) < 0)
                return r;
        return 0;
}

static int keep_cap(cap_value_t c)
{
        for (size_t i = 0; i < ELEMENTSOF(agent_caps); i++)
                if (agent_caps[i] == c)
                        return 1;
        return 0;
}

static void cap_freep(cap_t *c)
{
        if (*c)
                cap_free(*c);
}

int jail_proc_drop_caps(void)
{
        /* cap_max_bits() is what this kernel knows, whatever libcap was built against. */
        int last = (int)cap_max_bits() - 1;
        for (cap_value_t c = 0; c <= last; c++)
                if (!keep_cap(c) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return -errno;
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return -errno;
        __attribute__((cleanup(cap_freep))) cap_t caps = cap_init();
        if (!caps)
                return -ENOMEM;
        if (cap_set_flag(caps, CAP_PERMITTED, (int)ELEMENTSOF(agent_caps), agent_caps, CAP_SET) <
                0 ||
            cap_set_flag(caps, CAP_EFFECTIVE, (int)ELEMENTSOF(agent_caps), agent_caps, CAP_SET) < 0)
                return -EINVAL;
        if (cap_set_proc(caps) < 0)
                return -errno;
        return 0;
}

int jail_proc_fds(int listen_fd, int *sync_fd)
{
        /* Park both well above the target slots first, so no dup3 clobbers the other. */
        int l = fcntl(listen_fd, F_DUPFD_CLOEXEC, 100);
        if (l < 0)
                return -errno;
        int s = fcntl(*sync_fd, F_DUPFD_CLOEXEC, 100);
        if (s < 0)
                return -errno;
        _cleanup_close_ int null_lo = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
        if (null_lo < 0)
                return -errno;
        int null = fcntl(null_lo, F_DUPFD_CLOEXEC, 100);
        if (null < 0)
                return -errno;
        null_lo = safe_close(null_lo);
        if (dup3(null, 0, 0) < 0 || dup3(null, 1, 0) < 0 || dup3(l, JAIL_AGENT_LISTEN_FD, 0) < 0 ||
            dup3(s, JAIL_AGENT_LISTEN_FD + 1, O_CLOEXEC) < 0)
                return -errno;
        /* CVE-2024-21626 ("Leaky Vessels"): no host fd survives into the sandbox. */
        if (close_range(JAIL_AGENT_LISTEN_FD + 2, ~0U, 0) < 0)
                return -errno;
        *sync_fd = JAIL_AGENT_LISTEN_FD + 1;
        return 0;
}

static int env_has(char **env, size_t n, const char *key)
{
        size_t kl = strlen(key);
        for (size_t i = 0; i < n; i++)
                if (strncmp(env[i], key, kl) == 0 && env[i][kl] == '=')
                        return 1;
        return 0;
}

int jail_proc_env(const struct sbx_jail_spec *s, char ***ret_env)
{
        char **env = calloc(s->n_env + 4, sizeof(char *));
        size_t n = 0;
        if (!env)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_env; i++) {
                /* These two are the jailer's to set (below). */
                if (strcmp(s->env[i].name, "SBX_SANDBOX_ID") == 0 ||
                    strcmp(s->env[i].name, "SBX_AGENT_LISTEN_FD") == 0)
                        continue;
                if (asprintf(&env[n], "%s=%s", s->env[i].name, s->env[i].value) < 0) {
                        env[n] = NULL;
                        goto oom;
                }
                n++;
        }
        if (!env_has(env, n, "PATH") &&
            !(env[n++] =
                  strdup("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")))
                goto oom;
        if (asprintf(&env[n], "SBX_SANDBOX_ID=%s", s->id) < 0) {
                env[n] = NULL;
                goto oom;
        }
        n++;
        if (asprintf(&env[n], "SBX_AGENT_LISTEN_FD=%d", JAIL_AGENT_LISTEN_FD) < 0) {
                env[n] = NULL;
                goto oom;
        }
        *ret_env = env;
        return 0;
oom:
        for (size_t i = 0; i < n; i++)
                free(env[i]);
        free(env);
        return -ENOMEM;
}
