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

/* A passwd or group file read an entry at a time. */
struct ent_reader {
        FILE *f;
        char *buf;
        size_t bufsz;
        unsigned n; /* lines read, bounded by MAX_ENTRIES */
};

static void ent_reader_done(struct ent_reader *rd)
{
        if (rd->f)
                fclose(rd->f);
        free(rd->buf);
}

/* 0, or -errno of fopen(), with nothing held. */
static int ent_reader_open(struct ent_reader *rd, const char *path, size_t bufsz)
{
        rd->f = fopen(path, "re");
        if (!rd->f)
                return negative_errno();
        rd->buf = malloc(bufsz);
        if (!rd->buf)
                return -ENOMEM;
        rd->bufsz = bufsz;
        return 0;
}

/* After ERANGE: a bigger buffer, or past ENTRY_BUF_MAX skip the line (it is left unread). */
static int grow_or_skip(struct ent_reader *rd)
{
        int c;

        if (rd->bufsz < ENTRY_BUF_MAX) {
                char *nb = realloc(rd->buf, rd->bufsz * 4);
                if (!nb)
                        return -ENOMEM;
                rd->buf = nb;
                rd->bufsz *= 4;
                return 0;
        }
        while ((c = getc(rd->f)) != EOF && c != '\n')
                ;
        return 0;
}

/* The next entry into *pw or *gr (the other NULL): 1, 0 at the end of the file (or past
 * MAX_ENTRIES lines), or -errno. */
static int next_entry(struct ent_reader *rd, struct passwd *pw, struct group *gr)
{
        while (rd->n++ < MAX_ENTRIES) {
                struct passwd *pw_res = NULL;
                struct group *gr_res = NULL;
                int r = pw ? fgetpwent_r(rd->f, pw, rd->buf, rd->bufsz, &pw_res)
                           : fgetgrent_r(rd->f, gr, rd->buf, rd->bufsz, &gr_res);
                if (r == ERANGE) {
                        /* glibc left the stream at the start of the long line. */
                        r = grow_or_skip(rd);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (r == ENOENT || (r == 0 && !pw_res && !gr_res))
                        return 0;
                return r != 0 ? -r : 1;
        }
        return 0;
}

static int find_passwd(const char *name, struct agent_user *u)
{
        _cleanup_(ent_reader_done) struct ent_reader rd = {0};
        struct passwd pw;
        int r = ent_reader_open(&rd, PASSWD_FILE, 4096);
        if (r < 0)
                return r;
        while ((r = next_entry(&rd, &pw, NULL)) > 0) {
                if (strcmp(pw.pw_name, name) != 0)
                        continue;
                u->uid = pw.pw_uid;
                u->gid = pw.pw_gid;
                u->name = strdup(pw.pw_name);
                u->home = strdup(pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
                u->shell = strdup(pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh");
                return u->name && u->home && u->shell ? 0 : -ENOMEM;
        }
        return r < 0 ? r : -ENOENT;
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
        _cleanup_(ent_reader_done) struct ent_reader rd = {0};
        struct group gr;

        u->groups = calloc(MAX_GROUPS, sizeof(gid_t));
        if (!u->groups)
                return -ENOMEM;
        u->groups[u->n_groups++] = u->gid;
        int r = ent_reader_open(&rd, GROUP_FILE, 16384);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return 0; /* no /etc/group: primary group only */
        while (u->n_groups < MAX_GROUPS && (r = next_entry(&rd, NULL, &gr)) > 0)
                for (char **m = gr.gr_mem; m && *m; m++)
                        if (strcmp(*m, u->name) == 0 && !has_group(u, gr.gr_gid)) {
                                u->groups[u->n_groups++] = gr.gr_gid;
                                break;
                        }
        return r < 0 ? r : 0;
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
