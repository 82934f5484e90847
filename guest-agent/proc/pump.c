/* SPDX-License-Identifier: Apache-2.0 */
/* Running a spawned process (its pump) and attaching to one later (proc/process.h). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>

#include "macros.h"
#include "proc/table.h"
#include "time-util.h"

#define EXIT_DRAIN_GRACE_MS 150 /* pipes held open by a backgrounded grandchild */

struct pump {
        struct agent_proc *h;
        const struct agent_proc_listener *l; /* NULL once detached */
        int result;
        enum agent_output_stream out_kind[2];
        size_t chunk;
        bool exited;
        int64_t grace_end;
        uint8_t buf[AGENT_PROC_OUTPUT_CHUNK];
};

/* A callback's answer: anything but 0 detaches the listener and is the result. */
static void heard(struct pump *pm, int r)
{
        if (r != 0) {
                pm->l = NULL;
                pm->result = r;
        }
}

static void pump_output(struct pump *pm, int i)
{
        struct agent_proc *h = pm->h;
        ssize_t n = read(h->out_fd[i], pm->buf, pm->chunk);

        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        /* A pty master reads EIO once every slave fd is closed: that is its EOF. */
        if (n <= 0) {
                h->out_fd[i] = safe_close(h->out_fd[i]);
                return;
        }
        /* Retained for attaching (bounded); lost only when memory is short. */
        (void)agent_outlog_append(h->entry->log, pm->out_kind[i], pm->buf, (size_t)n);
        if (pm->l && pm->l->output)
                heard(pm, pm->l->output(pm->l->userdata, pm->out_kind[i], pm->buf, (size_t)n));
}

/* Write what the pipe takes of stdin_data; when all of it is written (or nobody reads any
 * more) close stdin, ours and the table's, so the reader sees EOF. */
static void pump_feed(struct pump *pm)
{
        struct agent_proc *h = pm->h;

        for (;;) {
                struct iovec iov[8];
                size_t skip = h->feed_off;
                int n_iov = 0;

                for (size_t i = 0; i < h->n_feed && n_iov < (int)ELEMENTSOF(iov); i++) {
                        if (skip >= h->feed[i].iov_len) {
                                skip -= h->feed[i].iov_len;
                                continue;
                        }
                        iov[n_iov++] =
                            (struct iovec){.iov_base = (char *)h->feed[i].iov_base + skip,
                                           .iov_len = h->feed[i].iov_len - skip};
                        skip = 0;
                }
                if (n_iov == 0)
                        break;
                ssize_t n = writev(h->feed_fd, iov, n_iov);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return;
                if (n < 0 && errno != EPIPE) /* EPIPE: the reader is gone, nothing to feed */
                        /* Never let the reader see EOF after part of its input. */
                        proc_kill_group(h->entry->pid, SIGKILL);
                if (n < 0)
                        break;
                h->feed_off += (size_t)n;
        }
        h->feed_fd = safe_close(h->feed_fd);
        proc_entry_close_stdin(h->entry);
}

/* One wait for output, the exit, the feed and the listener's fds. false when done. */
static bool pump_once(struct pump *pm)
{
        struct agent_proc *h = pm->h;
        struct pollfd pfd[4 + AGENT_PROC_LISTENER_FDS] = {
            {.fd = h->out_fd[0], .events = POLLIN},
            {.fd = h->out_fd[1], .events = POLLIN},
            {.fd = pm->exited ? -1 : h->entry->exit_efd, .events = POLLIN},
            {.fd = h->feed_fd, .events = POLLOUT},
        };
        struct pollfd *lfds = pfd + 4;
        int64_t now = now_ms();
        int timeout = -1;

        for (int i = 0; i < AGENT_PROC_LISTENER_FDS; i++)
                lfds[i] = (struct pollfd){.fd = -1};
        if (pm->exited) {
                if ((h->out_fd[0] < 0 && h->out_fd[1] < 0) || now >= pm->grace_end)
                        return false;
                timeout = (int)(pm->grace_end - now);
        }
        if (pm->l && pm->l->prepare) {
                int want = -1;
                heard(pm, pm->l->prepare(pm->l->userdata, lfds, &want));
                if (!pm->l)
                        for (int i = 0; i < AGENT_PROC_LISTENER_FDS; i++)
                                lfds[i].fd = -1;
                else if (want >= 0 && (timeout < 0 || want < timeout))
                        timeout = want;
        }
        if (poll(pfd, ELEMENTSOF(pfd), timeout) < 0)
                return errno == EINTR;
        for (int i = 0; i < 2; i++)
                if (pfd[i].fd >= 0 && pfd[i].revents)
                        pump_output(pm, i);
        if (pfd[3].fd >= 0 && pfd[3].revents)
                pump_feed(pm);
        if (pfd[2].fd >= 0 && pfd[2].revents) {
                eventfd_t v;
                (void)eventfd_read(h->entry->exit_efd, &v);
                pm->exited = true;
                pm->grace_end = now_ms() + EXIT_DRAIN_GRACE_MS;
        }
        if (pm->l && pm->l->dispatch)
                heard(pm, pm->l->dispatch(pm->l->userdata, lfds));
        return true;
}

int agent_proc_run(struct agent_proc *h, const struct agent_proc_listener *l)
{
        /* On the caller's stack (a connection thread has 512 KiB): nothing to allocate. */
        struct pump pm = {
            .h = h,
            .l = l,
            .out_kind = {h->pty ? AGENT_OUT_PTY : AGENT_OUT_STDOUT, AGENT_OUT_STDERR},
            .chunk = h->pty ? AGENT_PROC_PTY_CHUNK : AGENT_PROC_OUTPUT_CHUNK,
        };
        struct agent_exit ex;
        bool deadline;

        if (pm.l && pm.l->started)
                heard(&pm, pm.l->started(pm.l->userdata, h->entry->pid));
        while (pump_once(&pm))
                ;
        proc_entry_exit_state(h->entry, &ex, &deadline);
        if (pm.l && pm.l->exited)
                pm.result = pm.l->exited(pm.l->userdata, &ex, deadline);

        safe_close(h->out_fd[0]);
        safe_close(h->out_fd[1]);
        safe_close(h->feed_fd);
        proc_table_retire(h->entry);
        free(h->feed);
        free(h);
        return pm.result;
}

/* ---- attaching ---- */

static int attach_loop(struct agent_outlog *log, const struct agent_proc_listener *l)
{
        uint64_t seq = 0;

        for (;;) {
                struct pollfd fds[AGENT_PROC_LISTENER_FDS];
                struct agent_outlog_item it;
                int timeout = -1, r;

                for (int i = 0; i < AGENT_PROC_LISTENER_FDS; i++)
                        fds[i] = (struct pollfd){.fd = -1};
                if (l->prepare && (r = l->prepare(l->userdata, fds, &timeout)) != 0)
                        return r;
                if (timeout < 0 || timeout > AGENT_PROC_ATTACH_CHECK_MS)
                        timeout = AGENT_PROC_ATTACH_CHECK_MS;
                r = agent_outlog_next(log, &seq, now_ms() + timeout, &it);
                if (r < 0)
                        return r;
                if (it.kind == AGENT_OUTLOG_END)
                        return l->exited ? l->exited(l->userdata, &it.exit, it.deadline_killed) : 0;
                if (it.kind == AGENT_OUTLOG_CHUNK) {
                        r = l->output ? l->output(l->userdata, it.stream, it.data, it.len) : 0;
                        free(it.data);
                        if (r != 0)
                                return r;
                }
                /* The listener's fds are looked at without waiting: the wait is the log's. */
                if (poll(fds, ELEMENTSOF(fds), 0) < 0 && errno != EINTR)
                        return negative_errno();
                if (l->dispatch && (r = l->dispatch(l->userdata, fds)) != 0)
                        return r;
        }
}

int agent_proc_attach(const struct agent_selector *sel, const struct agent_proc_listener *l)
{
        static const struct agent_proc_listener nobody = {0};
        struct agent_outlog *log;
        pid_t pid;
        int r;

        if (proc_table_attach(sel, &pid, &log) < 0)
                return -ESRCH;
        if (!l)
                l = &nobody;
        r = l->started ? l->started(l->userdata, pid) : 0;
        if (r == 0)
                r = attach_loop(log, l);
        agent_outlog_unref(log);
        return r;
}
