/* SPDX-License-Identifier: Apache-2.0 */
/* The process table: entries, spawning into it, and the operations by selector
 * (proc/process.h). The pump (running, attaching) is in proc/pump.c. */
#include "proc/table.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "core/config.h"
#include "core/init.h"
#include "core/path.h"
#include "core/spawn.h"
#include "core/users.h"
#include "macros.h"
#include "proc/process-env.h"
#include "time-util.h"

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct proc_entry *table;

/* ---- entries ---- */

static void entry_free(struct proc_entry *p)
{
        if (!p)
                return;
        safe_close(p->stdin_fd);
        safe_close(p->exit_efd);
        free(p->tag);
        agent_outlog_unref(p->log);
        cJSON_Delete(p->config);
        free(p);
}

static void free_list(struct proc_entry *l)
{
        while (l) {
                struct proc_entry *n = l->next;
                entry_free(l);
                l = n;
        }
}

/* Drop finished entries past AGENT_PROC_RETAIN_FINISHED (oldest first) or older than
 * AGENT_PROC_RETAIN_MS. Call with table_lock held; returns the dropped entries as a list to
 * free outside the lock. */
static struct proc_entry *table_prune_locked(void)
{
        struct proc_entry *dropped = NULL;
        int64_t now = now_ms();
        unsigned kept = 0;

        /* New entries are at the head: the first finished ones are the newest. */
        for (struct proc_entry **pp = &table; *pp;) {
                struct proc_entry *p = *pp;
                if (p->finished && (kept >= AGENT_PROC_RETAIN_FINISHED ||
                                    now - p->finished_ms > AGENT_PROC_RETAIN_MS)) {
                        *pp = p->next;
                        p->next = dropped;
                        dropped = p;
                        continue;
                }
                if (p->finished)
                        kept++;
                pp = &p->next;
        }
        return dropped;
}

void proc_table_retire(struct proc_entry *p)
{
        struct proc_entry *dropped;

        pthread_mutex_lock(&table_lock);
        agent_outlog_finish(p->log, &p->exit, p->deadline_killed);
        p->finished = true;
        p->finished_ms = now_ms();
        p->stdin_fd = safe_close(p->stdin_fd);
        p->exit_efd = safe_close(p->exit_efd);
        dropped = table_prune_locked();
        pthread_mutex_unlock(&table_lock);
        free_list(dropped);
}

void proc_entry_exit_state(struct proc_entry *p, struct agent_exit *ret, bool *ret_deadline)
{
        pthread_mutex_lock(&table_lock);
        *ret = p->exit;
        *ret_deadline = p->deadline_killed;
        pthread_mutex_unlock(&table_lock);
}

void proc_entry_close_stdin(struct proc_entry *p)
{
        pthread_mutex_lock(&table_lock);
        p->stdin_fd = safe_close(p->stdin_fd);
        pthread_mutex_unlock(&table_lock);
}

void proc_kill_group(pid_t pid, int sig)
{
        /* The child is a session/group leader; kill the leader too in case it has not
         * reached setsid() yet. */
        (void)kill(-pid, sig);
        (void)kill(pid, sig);
}

static bool selected(const struct proc_entry *p, const struct agent_selector *sel)
{
        return sel->tag ? (p->tag && strcmp(p->tag, sel->tag) == 0) : (uint32_t)p->pid == sel->pid;
}

/* A running (not yet exited) process by pid or tag; call with table_lock held. Not exited means
 * not reaped: its pid cannot have been reused. */
static struct proc_entry *table_find(const struct agent_selector *sel)
{
        for (struct proc_entry *p = table; p; p = p->next)
                if (!p->exited && !p->finished && selected(p, sel))
                        return p;
        return NULL;
}

int proc_table_attach(const struct agent_selector *sel, pid_t *ret_pid,
                      struct agent_outlog **ret_log)
{
        struct proc_entry *found = NULL;

        pthread_mutex_lock(&table_lock);
        /* A running process first; else the newest finished one (entries are newest first). */
        for (int pass = 0; pass < 2 && !found; pass++)
                for (struct proc_entry *p = table; p && !found; p = p->next)
                        if ((pass == 0) != p->finished && selected(p, sel))
                                found = p;
        if (found) {
                *ret_pid = found->pid;
                *ret_log = agent_outlog_ref(found->log);
        }
        pthread_mutex_unlock(&table_lock);
        return found ? 0 : -ESRCH;
}

/* ---- the init loop's hooks ---- */

void agent_proc_on_exit(pid_t pid, int code, int status)
{
        pthread_mutex_lock(&table_lock);
        for (struct proc_entry *p = table; p; p = p->next)
                if (p->pid == pid && !p->exited && !p->finished) {
                        p->exited = true;
                        agent_exit_from_siginfo(code, status, &p->exit);
                        (void)eventfd_write(p->exit_efd, 1);
                        break;
                }
        pthread_mutex_unlock(&table_lock);
}

int agent_proc_enforce_deadlines(void)
{
        int64_t now = now_ms(), next = -1;

        pthread_mutex_lock(&table_lock);
        for (struct proc_entry *p = table; p; p = p->next) {
                if (p->exited || p->finished || p->deadline_ms == 0 || p->deadline_killed)
                        continue;
                if (p->deadline_ms <= now) {
                        p->deadline_killed = true;
                        proc_kill_group(p->pid, SIGKILL);
                } else if (next < 0 || p->deadline_ms - now < next)
                        next = p->deadline_ms - now;
        }
        pthread_mutex_unlock(&table_lock);
        return next < 0 ? -1 : (int)MIN(next, (int64_t)INT32_MAX);
}

void agent_proc_signal_all(int sig)
{
        pthread_mutex_lock(&table_lock);
        for (struct proc_entry *p = table; p; p = p->next)
                if (!p->exited && !p->finished)
                        proc_kill_group(p->pid, sig);
        pthread_mutex_unlock(&table_lock);
}

/* ---- spawning ---- */

/* The entry for spec, before its pid is known. */
static int entry_new(const struct agent_proc_spec *spec, struct proc_entry **ret)
{
        struct proc_entry *p = calloc(1, sizeof(*p));

        if (!p)
                return -ENOMEM;
        p->stdin_fd = -EBADF;
        p->exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        p->config = spec->config ? cJSON_Duplicate(spec->config, 1) : NULL;
        p->tag = spec->tag ? strdup(spec->tag) : NULL;
        p->log = agent_outlog_new();
        if (p->exit_efd < 0 || (spec->config && !p->config) || (spec->tag && !p->tag) || !p->log) {
                entry_free(p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

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
        if (agent_process_build_env(spec->user, spec->envs, &envp) < 0 || entry_new(spec, &p) < 0 ||
            !(h = calloc(1, sizeof(*h)))) {
                entry_free(p);
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
        /* Fork under the table lock: the reaper must find the pid when the child exits. */
        pthread_mutex_lock(&table_lock);
        e = agent_spawn(&s, &sp);
        if (e >= 0) {
                p->pid = sp.pid;
                p->stdin_fd = sp.stdin_fd;
                p->pty = spec->pty;
                p->deadline_ms = spec->timeout_ms > 0 ? now_ms() + spec->timeout_ms : 0;
                p->next = table;
                table = p;
        }
        pthread_mutex_unlock(&table_lock);
        if (e < 0) {
                entry_free(p);
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

/* ---- operations by selector ---- */

int agent_proc_find(const struct agent_selector *sel, pid_t *ret_pid)
{
        struct proc_entry *p;

        pthread_mutex_lock(&table_lock);
        p = table_find(sel);
        if (p)
                *ret_pid = p->pid;
        pthread_mutex_unlock(&table_lock);
        return p ? 0 : -ESRCH;
}

int agent_proc_signal(const struct agent_selector *sel, int sig)
{
        struct proc_entry *p;

        pthread_mutex_lock(&table_lock);
        p = table_find(sel);
        if (p)
                proc_kill_group(p->pid, sig);
        pthread_mutex_unlock(&table_lock);
        return p ? 0 : -ESRCH;
}

/* A CLOEXEC dup of a running process's stdin (pipe or pty master). want_pty < 0: either kind;
 * else -ENOTTY unless it is that kind. -ESRCH, -EBADF (no stdin). */
static int stdin_dup(const struct agent_selector *sel, int want_pty, int *ret_fd)
{
        struct proc_entry *p;
        int r;

        pthread_mutex_lock(&table_lock);
        p = table_find(sel);
        if (!p)
                r = -ESRCH;
        else if (p->stdin_fd < 0)
                r = -EBADF;
        else if (want_pty >= 0 && p->pty != (bool)want_pty)
                r = -ENOTTY;
        else if ((r = fcntl(p->stdin_fd, F_DUPFD_CLOEXEC, 3)) < 0)
                r = negative_errno();
        pthread_mutex_unlock(&table_lock);
        if (r < 0)
                return r;
        *ret_fd = r;
        return 0;
}

int agent_proc_write_input(const struct agent_selector *sel, bool pty, const void *buf, size_t len,
                           int cancel_fd, int timeout_ms)
{
        _cleanup_close_ int fd = -EBADF;
        const uint8_t *b = buf;
        int64_t deadline;
        int e, fl;

        if ((e = stdin_dup(sel, pty, &fd)) < 0)
                return e;
        /* The description is shared with the table's fd (and, for a pty, the pump's master,
         * which is non-blocking already); every writer goes through here or the feed, which
         * are non-blocking too. */
        if ((fl = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
                return negative_errno();
        deadline = now_ms() + timeout_ms;
        while (len > 0) {
                ssize_t n = write(fd, b, len);
                if (n > 0) {
                        b += n;
                        len -= (size_t)n;
                        continue;
                }
                if (n < 0 && errno != EAGAIN && errno != EINTR)
                        return negative_errno();
                struct pollfd p[2] = {{.fd = fd, .events = POLLOUT},
                                      {.fd = cancel_fd, .events = POLLRDHUP}};
                int64_t left = deadline - now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                if (poll(p, 2, (int)MIN(left, 1000)) < 0 && errno != EINTR)
                        return negative_errno();
                if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR))
                        return -ECONNRESET;
        }
        return 0;
}

int agent_proc_close_stdin(const struct agent_selector *sel)
{
        struct proc_entry *p;
        int r = 0;

        pthread_mutex_lock(&table_lock);
        p = table_find(sel);
        if (!p)
                r = -ESRCH;
        else if (p->pty)
                r = -ENOTTY;
        else
                p->stdin_fd = safe_close(p->stdin_fd);
        pthread_mutex_unlock(&table_lock);
        return r;
}

int agent_proc_resize(const struct agent_selector *sel, unsigned short cols, unsigned short rows)
{
        _cleanup_close_ int fd = -EBADF;
        struct winsize ws = {.ws_row = rows, .ws_col = cols};
        int e = stdin_dup(sel, true, &fd);

        if (e == -EBADF)
                return -ENOTTY;
        if (e < 0)
                return e;
        return ioctl(fd, TIOCSWINSZ, &ws) < 0 ? negative_errno() : 0;
}

int agent_proc_foreach(int (*fn)(void *userdata, pid_t pid, const char *tag, const cJSON *config),
                       void *userdata)
{
        int r = 0;

        pthread_mutex_lock(&table_lock);
        for (struct proc_entry *p = table; p && r == 0; p = p->next)
                if (!p->exited && !p->finished)
                        r = fn(userdata, p->pid, p->tag, p->config);
        pthread_mutex_unlock(&table_lock);
        return r;
}

unsigned agent_proc_count(void)
{
        unsigned n = 0;

        pthread_mutex_lock(&table_lock);
        for (struct proc_entry *p = table; p; p = p->next)
                n += !p->finished;
        pthread_mutex_unlock(&table_lock);
        return n;
}
