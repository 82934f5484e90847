/* SPDX-License-Identifier: Apache-2.0 */
/* Starting a process (proc/process.h): its cwd and environment, its entry forked into the table
 * (proc/table.c), its stdin data's feed; a process whose feed cannot be set up is killed and
 * handed to the pump (proc/pump.c) to be reaped and retired. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/config.h"
#include "core/init.h"
#include "core/path.h"
#include "core/spawn.h"
#include "core/users.h"
#include "macros.h"
#include "proc/process-env.h"
#include "proc/table.h"

/* The handle's feed: a non-blocking dup of the stdin pipe, readable by the user too, before
 * anything is written. A shell that reopens /dev/stdin (bash's `. /dev/stdin`) needs the
 * latter, which the pipe inode's permissions decide (agent-made pipes are root's, 0600); only
 * the process itself, or one that may ptrace it, reaches its /proc/self/fd, so this opens it
 * to nobody else. */
static int feed_open(struct agent_proc *h, const struct agent_proc_spec *spec, int stdin_fd)
{
        int fl;

        h->feed = calloc(spec->n_stdin_data, sizeof(*h->feed));
        if (!h->feed)
                return -ENOMEM;
        memcpy(h->feed, spec->stdin_data, spec->n_stdin_data * sizeof(*h->feed));
        h->n_feed = spec->n_stdin_data;
        h->feed_fd = fcntl(stdin_fd, F_DUPFD_CLOEXEC, 3);
        if (h->feed_fd < 0 || (fl = fcntl(h->feed_fd, F_GETFL)) < 0 ||
            fcntl(h->feed_fd, F_SETFL, fl | O_NONBLOCK) < 0 || fchmod(h->feed_fd, 0644) < 0)
                return negative_errno();
        return 0;
}

/* Where the process starts: spec->cwd resolved as envd does. Answers for errbuf. */
static int resolve_cwd(const struct agent_proc_spec *spec, char **ret, char *errbuf)
{
        _cleanup_free_ char *workdir = NULL, *cwd = NULL;
        struct stat st;

        if (agent_config_default_workdir(&workdir) < 0) {
                snprintf(errbuf, AGENT_PROC_ERR_MAX, "out of memory");
                return -ENOMEM;
        }
        if (agent_path_resolve(spec->cwd, spec->user->home, workdir, &cwd) < 0) {
                snprintf(errbuf, AGENT_PROC_ERR_MAX, "invalid cwd '%s'",
                         spec->cwd ? spec->cwd : "");
                return -EINVAL;
        }
        /* Looked at with the user's rights: whether a path exists where the user may not look
         * is for chdir in the child to refuse, as a shell's cd does. */
        int creds = agent_fs_become(spec->user) >= 0;
        bool missing = creds && stat(cwd, &st) < 0 && errno == ENOENT;
        if (creds)
                agent_fs_restore();
        if (missing) {
                snprintf(errbuf, AGENT_PROC_ERR_MAX, "cwd '%s' does not exist", cwd);
                return -ENOENT;
        }
        *ret = TAKE_PTR(cwd);
        return 0;
}

int agent_proc_spawn(const struct agent_proc_spec *spec, struct agent_proc **ret,
                     char errbuf[static AGENT_PROC_ERR_MAX])
{
        _cleanup_strv_free_ char **envp = NULL;
        _cleanup_free_ char *cwd = NULL;
        struct agent_spawned sp;
        struct proc_entry *p = NULL;
        struct agent_proc *h;
        int e;

        errbuf[0] = 0;
        if ((e = resolve_cwd(spec, &cwd, errbuf)) < 0)
                return e;
        if (agent_process_build_env(spec->user, spec->envs, &envp) < 0 ||
            proc_entry_new(spec, &p) < 0 || !(h = calloc(1, sizeof(*h)))) {
                proc_entry_free(p);
                snprintf(errbuf, AGENT_PROC_ERR_MAX, "cannot allocate process state");
                return -ENOMEM;
        }

        struct agent_spawn s = {
            .argv = spec->argv,
            .envp = (const char *const *)envp,
            .cwd = cwd,
            .user = spec->user,
            .stdin_pipe = spec->stdin_pipe,
            .pty = spec->pty,
            .cols = spec->pty ? (spec->cols ? spec->cols : 80) : 0,
            .rows = spec->pty ? (spec->rows ? spec->rows : 24) : 0,
        };
        e = proc_table_spawn(p, &s, spec->timeout_ms, &sp);
        if (e < 0) {
                proc_entry_free(p);
                free(h);
                snprintf(errbuf, AGENT_PROC_ERR_MAX, "error starting process '%s': %s",
                         spec->argv[0], strerror(-e));
                return e;
        }
        if (spec->timeout_ms > 0)
                agent_init_wake();

        *h = (struct agent_proc){.entry = p,
                                 .out_fd = {sp.stdout_fd, sp.stderr_fd},
                                 .pty = spec->pty,
                                 .feed_fd = -EBADF};
        if (spec->n_stdin_data > 0 && spec->stdin_pipe && !spec->pty && p->stdin_fd >= 0 &&
            (e = feed_open(h, spec, p->stdin_fd)) < 0) {
                /* Nothing was written: kill it before anyone reads a partial input, and let the
                 * pump reap and retire it. */
                proc_kill_group(p->pid, SIGKILL);
                (void)agent_proc_run(h, NULL);
                snprintf(errbuf, AGENT_PROC_ERR_MAX, "feeding the process: %s", strerror(-e));
                return -EIO;
        }
        *ret = h;
        return 0;
}

pid_t agent_proc_pid(const struct agent_proc *h)
{
        return h->entry->pid;
}
