/* SPDX-License-Identifier: Apache-2.0 */
/* The process table: entries, the locked fork that puts one in, and the operations by selector
 * (proc/process.h). Starting a process is proc/start.c; the pump (running, attaching)
 * proc/pump.c. */
#include "proc/table.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "core/spawn.h"
#include "macros.h"
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

/* ---- spawning into the table ---- */

int proc_entry_new(const struct agent_proc_spec *spec, struct proc_entry **ret)
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

void proc_entry_free(struct proc_entry *p)
{
        entry_free(p);
}

int proc_table_spawn(struct proc_entry *p, const struct agent_spawn *s, int64_t timeout_ms,
                     struct agent_spawned *ret)
{
        /* Fork under the table lock: the reaper must find the pid when the child exits. */
        pthread_mutex_lock(&table_lock);
        int e = agent_spawn(s, ret);
        if (e >= 0) {
                p->pid = ret->pid;
                p->stdin_fd = ret->stdin_fd;
                p->pty = s->pty;
                p->deadline_ms = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
                p->next = table;
                table = p;
        }
        pthread_mutex_unlock(&table_lock);
        return e;
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
