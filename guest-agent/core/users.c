/* SPDX-License-Identifier: Apache-2.0 */
#include "core/users.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macros.h"

#define MAX_GROUPS 256

void agent_user_done(struct agent_user *u)
{
        free(u->name);
        free(u->home);
        free(u->shell);
        free(u->groups);
        *u = (struct agent_user){0};
}

/*
 * The sandbox's /etc/passwd and /etc/group are parsed directly with fgetpwent_r/fgetgrent_r
 * instead of getpwnam_r/getgrouplist: those go through NSS, which may dlopen() modules named
 * in the sandbox's /etc/nsswitch.conf from the sandbox's (writable) file system into PID 1,
 * giving code that sandbox root planted the agent's capabilities.
 */
#define PASSWD_FILE   "/etc/passwd"
#define GROUP_FILE    "/etc/group"
#define MAX_ENTRIES   100000 /* bound the scan of a hostile, huge file */
#define ENTRY_BUF_MAX (1024u * 1024u)

static void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

/* After ERANGE: a bigger buffer, or past ENTRY_BUF_MAX skip the line (it is left unread). */
static int grow_or_skip(FILE *f, char **buf, size_t *bufsz)
{
        int c;

        if (*bufsz < ENTRY_BUF_MAX) {
                char *nb = realloc(*buf, *bufsz * 4);
                if (!nb)
                        return -ENOMEM;
                *buf = nb;
                *bufsz *= 4;
                return 0;
        }
        while ((c = getc(f)) != EOF && c != '\n')
                ;
        return 0;
}

static int find_passwd(const char *name, struct agent_user *u)
{
        _cleanup_(fclosep) FILE *f = fopen(PASSWD_FILE, "re");
        size_t bufsz = 4096;
        struct passwd pw, *res;
        int r;

        if (!f)
                return errno == ENOENT ? -ENOENT : negative_errno();
        _cleanup_free_ char *buf = malloc(bufsz);
        if (!buf)
                return -ENOMEM;
        for (unsigned n = 0; n < MAX_ENTRIES; n++) {
                r = fgetpwent_r(f, &pw, buf, bufsz, &res);
                if (r == ERANGE) {
                        /* glibc left the stream at the start of the long line. */
                        r = grow_or_skip(f, &buf, &bufsz);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (r == ENOENT || (r == 0 && !res))
                        return -ENOENT;
                if (r != 0)
                        return -r;
                if (strcmp(pw.pw_name, name) != 0)
                        continue;
                u->uid = pw.pw_uid;
                u->gid = pw.pw_gid;
                u->name = strdup(pw.pw_name);
                u->home = strdup(pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
                u->shell = strdup(pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh");
                return u->name && u->home && u->shell ? 0 : -ENOMEM;
        }
        return -ENOENT;
}

static bool has_group(const struct agent_user *u, gid_t g)
{
        for (int i = 0; i < u->n_groups; i++)
                if (u->groups[i] == g)
                        return true;
        return false;
}

/* Primary group first, then every group listing the user as a member (like getgrouplist). */
static int find_groups(struct agent_user *u)
{
        _cleanup_(fclosep) FILE *f = NULL;
        size_t bufsz = 16384;
        struct group gr, *res;

        u->groups = calloc(MAX_GROUPS, sizeof(gid_t));
        if (!u->groups)
                return -ENOMEM;
        u->groups[u->n_groups++] = u->gid;
        f = fopen(GROUP_FILE, "re");
        if (!f)
                return 0; /* no /etc/group: primary group only */
        _cleanup_free_ char *buf = malloc(bufsz);
        if (!buf)
                return -ENOMEM;
        for (unsigned n = 0; n < MAX_ENTRIES && u->n_groups < MAX_GROUPS; n++) {
                int r = fgetgrent_r(f, &gr, buf, bufsz, &res);
                if (r == ERANGE) {
                        r = grow_or_skip(f, &buf, &bufsz);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (r == ENOENT || (r == 0 && !res))
                        break;
                if (r != 0)
                        return -r;
                for (char **m = gr.gr_mem; m && *m; m++)
                        if (strcmp(*m, u->name) == 0 && !has_group(u, gr.gr_gid)) {
                                u->groups[u->n_groups++] = gr.gr_gid;
                                break;
                        }
        }
        return 0;
}

int agent_user_lookup(const char *name, struct agent_user *ret)
{
        struct agent_user u = {0};
        int r;

        if (!name || !*name || strchr(name, ':') || strchr(name, '\n'))
                return -ENOENT;
        r = find_passwd(name, &u);
        if (r >= 0)
                r = find_groups(&u);
        if (r < 0) {
                agent_user_done(&u);
                return r;
        }
        *ret = u;
        return 0;
}

/* Raw capget/capset act on the calling thread only (libcap's cap_set_proc may act on every
 * thread of the process). */
struct thread_caps {
        struct __user_cap_header_struct head;
        struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
};

static int caps_get(struct thread_caps *c)
{
        c->head = (struct __user_cap_header_struct){.version = _LINUX_CAPABILITY_VERSION_3};
        return syscall(SYS_capget, &c->head, c->data) < 0 ? negative_errno() : 0;
}

static int caps_set(struct thread_caps *c)
{
        c->head.pid = 0;
        return syscall(SYS_capset, &c->head, c->data) < 0 ? negative_errno() : 0;
}

uint64_t agent_user_caps(uid_t uid)
{
        /* Docker's default set for a container's root cut to owning files (chown, a mode or
         * time on a file of another user, set-id bits kept on write) and switching users (apt's
         * download user, su, runuser, useradd). Not CAP_KILL and CAP_SETPCAP, the two the
         * agent holds besides these (jailer/jail-proc.c). */
        if (uid != 0)
                return 0;
        return AGENT_CAP_BIT(CAP_CHOWN) | AGENT_CAP_BIT(CAP_DAC_OVERRIDE) |
               AGENT_CAP_BIT(CAP_FOWNER) | AGENT_CAP_BIT(CAP_FSETID) | AGENT_CAP_BIT(CAP_SETUID) |
               AGENT_CAP_BIT(CAP_SETGID);
}

/* What the last switch of this thread gave it (agent_fs_cap_lower goes back to it). */
static _Thread_local uint64_t fs_caps;

/* The thread's effective set: mask within the permitted set; with one, nothing but cap, which
 * must be permitted. */
static int caps_effective(uint64_t mask, int one)
{
        struct thread_caps c;
        int e = caps_get(&c);

        if (e < 0)
                return e;
        for (size_t i = 0; i < ELEMENTSOF(c.data); i++)
                c.data[i].effective = c.data[i].permitted & (uint32_t)(mask >> (32 * i));
        if (one >= 0) {
                if (!(c.data[CAP_TO_INDEX(one)].permitted & CAP_TO_MASK(one)))
                        return -EPERM;
                for (size_t i = 0; i < ELEMENTSOF(c.data); i++)
                        c.data[i].effective = 0;
                c.data[CAP_TO_INDEX(one)].effective = CAP_TO_MASK(one);
        }
        return caps_set(&c);
}

static int become(const struct agent_user *u, uint64_t caps)
{
        /* Changing ids needs CAP_SETUID and CAP_SETGID, which an earlier switch cleared. */
        if (caps_effective(UINT64_MAX, -1) < 0)
                goto fail;
        if (syscall(SYS_setgroups, (size_t)u->n_groups, u->groups) < 0)
                goto fail;
        /* setfsuid/setfsgid return the previous id and never fail visibly: verify. */
        syscall(SYS_setfsgid, u->gid);
        if ((gid_t)syscall(SYS_setfsgid, (gid_t)-1) != u->gid)
                goto fail;
        syscall(SYS_setfsuid, u->uid);
        if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != u->uid)
                goto fail;
        /* The user's own rights and nothing more: what a process of the user holds
         * (core/spawn.c), root's six capabilities or nothing. The agent's other capabilities
         * would apply to every inode whose owner is mapped in the sandbox's user namespace,
         * the host's files seen through an idmapped bind included. */
        if (caps_effective(caps, -1) < 0)
                goto fail;
        fs_caps = caps;
        return 0;
fail:
        agent_fs_restore();
        return -EPERM;
}

int agent_fs_become(const struct agent_user *u)
{
        return become(u, agent_user_caps(u->uid));
}

int agent_fs_become_bare(const struct agent_user *u)
{
        return become(u, 0);
}

int agent_fs_cap_raise(int cap)
{
        return caps_effective(0, cap);
}

int agent_fs_cap_lower(void)
{
        return caps_effective(fs_caps, -1);
}

void agent_fs_restore(void)
{
        /* Capabilities first: setgroups needs CAP_SETGID. fs uid 0 then keeps them all. */
        (void)caps_effective(UINT64_MAX, -1);
        fs_caps = 0;
        syscall(SYS_setfsuid, 0);
        syscall(SYS_setfsgid, 0);
        syscall(SYS_setgroups, (size_t)0, NULL);
}
