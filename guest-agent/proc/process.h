/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process table and its C API: every process started in the sandbox on a client's behalf,
 * whether through envd (envd/process-*.c, which turns events into Connect JSON) or the native
 * API (native/, which turns them into its own shapes).
 *
 * A starter spawns a process (agent_proc_spawn()) and then runs it (agent_proc_run()) on its
 * own thread: that thread is the process's pump. It reads the process's output, appends every
 * chunk to the process's retained output log (proc/outlog.h) and tells the starter's listener
 * about it, until the process has exited and its pipes are drained. Writes to the starter's
 * client may block the listener: the pump then stops reading and the process blocks on a full
 * pipe (backpressure), nothing piles up. A listener that stops listening (a callback returning
 * non-zero) is detached: the pump keeps draining into the log alone, and the process runs on
 * unless the listener killed it. Others can attach to a process later (agent_proc_attach()),
 * by pid or tag: they get the retained output first, then what follows, from the log.
 *
 * The reaper (core/init.c) is the only code that waits for children: it hands exit statuses to
 * agent_proc_on_exit(), which records them and wakes the pump. Deadlines are enforced from the
 * init loop (agent_proc_enforce_deadlines()), so a process is killed on time whether or not
 * anybody is listening. When its pump is done, a process's entry stays, finished, for attaching
 * only (not listed, not signalled): at most AGENT_PROC_RETAIN_FINISHED of them, for at most
 * AGENT_PROC_RETAIN_MS.
 *
 * All functions are thread-safe. Errors are -errno; -ESRCH means no running process matches a
 * selector (one that has exited no longer does).
 */
#pragma once

#include <cjson/cJSON.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "core/users.h"
#include "proc/exit-status.h"
#include "proc/outlog.h"

#define AGENT_PROC_RETAIN_FINISHED 32               /* finished processes kept for attaching */
#define AGENT_PROC_RETAIN_MS       (10 * 60 * 1000) /* ... for at most this long */
#define AGENT_PROC_OUTPUT_CHUNK    (32u * 1024u)    /* bytes per pipe read (envd's stdChunkSize) */
#define AGENT_PROC_PTY_CHUNK       (16u * 1024u)    /* bytes per pty read (envd's ptyChunkSize) */
#define AGENT_PROC_ERR_MAX         512              /* bytes of a spawn error message */
#define AGENT_PROC_LISTENER_FDS    2                /* fds a listener may have polled */

/* A process by tag when tag is non-NULL, else by pid. */
struct agent_selector {
        uint32_t pid;
        const char *tag;
};

/* What to start. Only argv and user are required. */
struct agent_proc_spec {
        const char *const *argv;        /* argv[0] is searched in the new environment's PATH */
        const cJSON *envs;              /* more environment: an object of strings, or NULL */
        const char *cwd;                /* as asked, resolved as envd does (NULL: the /init
                                           workdir, else the user's home) */
        const struct agent_user *user;  /* the process runs as this user */
        const char *tag;                /* a name to select it by, or NULL */
        const cJSON *config;            /* what agent_proc_foreach() reports for it, or NULL */
        bool stdin_pipe;                /* stdin is a pipe (else /dev/null); ignored with pty */
        bool pty;                       /* stdin/stdout/stderr are one new pseudo-terminal */
        unsigned short cols, rows;      /* its size, with pty */
        int64_t timeout_ms;             /* lifetime: killed (SIGKILL to its group) at expiry; 0 */
        const struct iovec *stdin_data; /* with stdin_pipe: bytes the pump writes to stdin as it
                                           is read, closing it after them (the pipe is made
                                           readable by the user: a shell may reopen it); they
                                           stay the caller's until agent_proc_run() returns */
        size_t n_stdin_data;
};

/* A spawned process, held by its starter until agent_proc_run() consumes it. */
struct agent_proc;

/*
 * Start spec: environment (core/config.h's /init defaults, then spec->envs,
 * proc/process-env.h), working directory, then core/spawn.h's agent_spawn() under the table
 * lock, so that the reaper finds the pid. Returns 0 with *ret, or -errno with a message in
 * errbuf: -EINVAL (the cwd cannot be resolved), -ENOENT (the cwd does not exist), -ENOMEM,
 * pipe/fork's -errno (-EAGAIN, -EMFILE, ...), or -EIO when the process started but its
 * stdin_data could not be set up (it was killed and reaped then). Failures of the exec itself are
 * not returned: the process exits 127 or 126 with a line on its stderr, as a shell's child would.
 */
int agent_proc_spawn(const struct agent_proc_spec *spec, struct agent_proc **ret,
                     char errbuf[static AGENT_PROC_ERR_MAX]);

pid_t agent_proc_pid(const struct agent_proc *p);

/*
 * Who hears a process's events. Every callback may be NULL and runs on the thread in
 * agent_proc_run() or agent_proc_attach(). A callback returns 0 to go on listening; any other
 * value (a status, or -errno) detaches the listener, no further callback is made, and the value
 * becomes what agent_proc_run() / agent_proc_attach() return.
 */
struct agent_proc_listener {
        void *userdata;
        /* First: the process's pid. */
        int (*started)(void *userdata, pid_t pid);
        /* One chunk, as read (at most AGENT_PROC_OUTPUT_CHUNK / AGENT_PROC_PTY_CHUNK bytes). */
        int (*output)(void *userdata, enum agent_output_stream stream, const uint8_t *buf,
                      size_t len);
        /* Last: how it ended, once its output was drained (deadline_killed: by its timeout).
         * What it returns is the result. */
        int (*exited)(void *userdata, const struct agent_exit *ex, bool deadline_killed);
        /* Before each wait: the listener's own fds to watch (fd -1: none; all start at -1) and
         * the longest wait it allows in ms (-1: no limit). */
        int (*prepare)(void *userdata, struct pollfd fds[AGENT_PROC_LISTENER_FDS], int *timeout_ms);
        /* After each wait (also one that timed out): those fds with their revents. */
        int (*dispatch)(void *userdata, const struct pollfd fds[AGENT_PROC_LISTENER_FDS]);
};

/*
 * Pump p on the calling thread until the process has exited and its output is drained (after
 * the exit, output still coming through pipes a background grandchild holds open is read for
 * a short grace period), telling l (NULL: nobody) about it; then retire its entry. Consumes p.
 * Returns what l->exited returned, or the value with which a callback detached (0 when no
 * callback said anything).
 */
int agent_proc_run(struct agent_proc *p, const struct agent_proc_listener *l);

/*
 * Attach l to the running process matching sel, else to the newest finished one still kept:
 * started (its pid), every retained chunk then the live ones, exited. Blocks until then or
 * until l detaches. A listener that falls more than the log behind a flooding process skips
 * what was dropped (only the starter's listener gets everything). The listener's fds are
 * checked at least every AGENT_PROC_ATTACH_CHECK_MS. -ESRCH when nothing matches.
 */
#define AGENT_PROC_ATTACH_CHECK_MS 500
int agent_proc_attach(const struct agent_selector *sel, const struct agent_proc_listener *l);

/* Operations on a running process. */

/* A running process matching sel: its pid. */
int agent_proc_find(const struct agent_selector *sel, pid_t *ret_pid);
/* Send sig to the process's group. */
int agent_proc_signal(const struct agent_selector *sel, int sig);
/*
 * Write all of buf to the process's stdin pipe (pty false) or its pseudo-terminal (pty true).
 * While the process does not read, waits at most timeout_ms (0: no wait at all), and gives up
 * with -ECONNRESET when cancel_fd (a client's connection, or -1) hangs up. -EBADF when stdin is
 * /dev/null or closed, -ENOTTY when pty does not match how the process was started,
 * -ETIMEDOUT, or write's -errno (-EPIPE: nobody reads it any more).
 */
int agent_proc_write_input(const struct agent_selector *sel, bool pty, const void *buf, size_t len,
                           int cancel_fd, int timeout_ms);
/* Close the stdin pipe (idempotent). -ENOTTY for a pty process. */
int agent_proc_close_stdin(const struct agent_selector *sel);
/* Resize the pseudo-terminal. -ENOTTY when the process has none, ioctl's -errno. */
int agent_proc_resize(const struct agent_selector *sel, unsigned short cols, unsigned short rows);

/* Call fn for every running process, newest first, under the table lock (fn must not block or
 * call into this API); stops at and returns fn's first non-zero result. */
int agent_proc_foreach(int (*fn)(void *userdata, pid_t pid, const char *tag, const cJSON *config),
                       void *userdata);

/* Number of running entries (tests, diagnostics). */
unsigned agent_proc_count(void);

/* For the init loop (core/init.h's hooks). */

/* Reaper hook: child pid ended (si_code/si_status from waitid). Unknown pids are ignored. */
void agent_proc_on_exit(pid_t pid, int code, int status);
/* Kill the process group of every expired deadline. Returns ms until the next deadline, or
 * -1 when there is none. */
int agent_proc_enforce_deadlines(void);
/* Send sig to the process group of every running process (shutdown). */
void agent_proc_signal_all(int sig);
