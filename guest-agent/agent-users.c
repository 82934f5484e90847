/* SPDX-License-Identifier: Apache-2.0 */
#include "agent-users.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
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

int agent_user_lookup(const char *name, struct agent_user *ret)
{
        struct agent_user u = {0};
        struct passwd pw, *res = NULL;
        size_t bufsz = 16384;
        int r, n;

        if (!name || !*name)
                return -ENOENT;
        _cleanup_free_ char *buf = malloc(bufsz);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                r = getpwnam_r(name, &pw, buf, bufsz, &res);
                if (r != ERANGE || bufsz >= 1024 * 1024)
                        break;
                bufsz *= 4;
                free(buf);
                buf = malloc(bufsz);
                if (!buf)
                        return -ENOMEM;
        }
        if (r != 0)
                return -r;
        if (!res)
                return -ENOENT;

        u.uid = pw.pw_uid;
        u.gid = pw.pw_gid;
        u.name = strdup(pw.pw_name);
        u.home = strdup(pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
        u.shell = strdup(pw.pw_shell && *pw.pw_shell ? pw.pw_shell : "/bin/sh");
        n = MAX_GROUPS;
        u.groups = calloc(MAX_GROUPS, sizeof(gid_t));
        if (!u.name || !u.home || !u.shell || !u.groups) {
                agent_user_done(&u);
                return -ENOMEM;
        }
        if (getgrouplist(pw.pw_name, pw.pw_gid, u.groups, &n) < 0)
                n = MAX_GROUPS; /* too many: keep the first MAX_GROUPS */
        u.n_groups = n;
        *ret = u;
        return 0;
}

int agent_fs_become(const struct agent_user *u)
{
        if (syscall(SYS_setgroups, (size_t)u->n_groups, u->groups) < 0)
                return negative_errno();
        /* setfsuid/setfsgid return the previous id and never fail visibly: verify. */
        syscall(SYS_setfsgid, u->gid);
        if ((gid_t)syscall(SYS_setfsgid, (gid_t)-1) != u->gid)
                goto fail;
        syscall(SYS_setfsuid, u->uid);
        if ((uid_t)syscall(SYS_setfsuid, (uid_t)-1) != u->uid)
                goto fail;
        return 0;
fail:
        agent_fs_restore();
        return -EPERM;
}

void agent_fs_restore(void)
{
        /* Order matters: fsuid 0 first brings back the fs capabilities. */
        syscall(SYS_setfsuid, 0);
        syscall(SYS_setfsgid, 0);
        syscall(SYS_setgroups, (size_t)0, NULL);
}
