/* SPDX-License-Identifier: Apache-2.0 */
#include "proc/process.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/config.h"
#include "envd/connect-json.h"
#include "proc/outlog.h"
#include "core/path.h"
#include "proc/process-env.h"
#include "core/spawn.h"
#include "connect.h"
#include "macros.h"
#include "json-util.h"
#include "time-util.h"

#define OUTPUT_CHUNK        (32u * 1024u) /* envd's stdChunkSize */
#define PTY_CHUNK           (16u * 1024u) /* envd's ptyChunkSize */
#define EXIT_DRAIN_GRACE_MS 150           /* pipes held open by a backgrounded grandchild */
#define MAX_ARGS            4096u
#define MAX_REQUEST_ENVS    4096u
#define RETAIN_FINISHED     32               /* finished processes kept for Connect */
#define RETAIN_MS           (10 * 60 * 1000) /* ... for at most this long */

struct agent_proc {
        struct agent_proc *next;
        pid_t pid;
        char *tag;
        cJSON *config; /* the request's ProcessConfig, for List */
        int stdin_fd;  /* pipe write end or pty master; -EBADF when /dev/null or closed */
        bool pty;
        int exit_efd;        /* written by agent_process_on_exit */
        int64_t deadline_ms; /* CLOCK_MONOTONIC ms, 0 = none */
        bool deadline_killed;
        bool exited;
        struct agent_exit exit;
        struct agent_outlog *log; /* retained output, for Connect */
        bool finished;            /* its Start stream is done; kept for Connect only */
        int64_t finished_ms;
};

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct agent_proc *table;
static int wake_fd = -EBADF;

/* ---- table ---- */

void agent_process_set_wake_fd(int fd)
{
        wake_fd = fd;
}

static void proc_free(struct agent_proc *p)
{
        if (!p)
                return;
        safe_close(p->stdin_fd);
        safe_close(p->exit_efd);
        free(p->tag);
        agent_outlog_unref(p->log);
        if (p->config)
                cJSON_Delete(p->config);
        free(p);
}

/* Drop finished entries past RETAIN_FINISHED (oldest first) or older than RETAIN_MS. Call
 * with table_lock held; returns the dropped entries as a list to free outside the lock. */
static struct agent_proc *table_prune_locked(void)
{
        struct agent_proc *dropped = NULL;
        int64_t now = now_ms();
        unsigned kept = 0;

        /* New entries are at the head: the first RETAIN_FINISHED finished ones are the newest. */
        for (struct agent_proc **pp = &table; *pp;) {
                struct agent_proc *p = *pp;
                if (p->finished && (kept >= RETAIN_FINISHED || now - p->finished_ms > RETAIN_MS)) {
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

static void free_list(struct agent_proc *l)
{
        while (l) {
                struct agent_proc *n = l->next;
                proc_free(l);
                l = n;
        }
}

/* The Start stream is done: keep the entry (exit status, output) for Connect, bounded. */
static void table_retire(struct agent_proc *p)
{
        struct agent_proc *dropped;

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

void agent_process_on_exit(pid_t pid, int code, int status)
{
        pthread_mutex_lock(&table_lock);
        for (struct agent_proc *p = table; p; p = p->next)
                if (p->pid == pid && !p->exited && !p->finished) {
                        p->exited = true;
                        agent_exit_from_siginfo(code, status, &p->exit);
                        (void)eventfd_write(p->exit_efd, 1);
                        break;
                }
        pthread_mutex_unlock(&table_lock);
}

static void kill_group(pid_t pid, int sig)
{
        /* The child is a session/group leader; kill the leader too in case it has not
         * reached setsid() yet. */
        (void)kill(-pid, sig);
        (void)kill(pid, sig);
}

int agent_process_enforce_deadlines(void)
{
        int64_t now = now_ms(), next = -1;

        pthread_mutex_lock(&table_lock);
        for (struct agent_proc *p = table; p; p = p->next) {
                if (p->exited || p->finished || p->deadline_ms == 0 || p->deadline_killed)
                        continue;
                if (p->deadline_ms <= now) {
                        p->deadline_killed = true;
                        kill_group(p->pid, SIGKILL);
                } else if (next < 0 || p->deadline_ms - now < next)
                        next = p->deadline_ms - now;
        }
        pthread_mutex_unlock(&table_lock);
        return next < 0 ? -1 : (int)MIN(next, (int64_t)INT32_MAX);
}

void agent_process_signal_all(int sig)
{
        pthread_mutex_lock(&table_lock);
        for (struct agent_proc *p = table; p; p = p->next)
                if (!p->exited && !p->finished)
                        kill_group(p->pid, sig);
        pthread_mutex_unlock(&table_lock);
}

unsigned agent_process_count(void)
{
        unsigned n = 0;
        pthread_mutex_lock(&table_lock);
        for (struct agent_proc *p = table; p; p = p->next)
                n += !p->finished;
        pthread_mutex_unlock(&table_lock);
        return n;
}

int agent_process_attach(const struct agent_selector *sel, uint32_t *ret_pid,
                         struct agent_outlog **ret_log)
{
        struct agent_proc *found = NULL;

        pthread_mutex_lock(&table_lock);
        /* A running process first; else the newest finished one (entries are newest first). */
        for (int pass = 0; pass < 2 && !found; pass++)
                for (struct agent_proc *p = table; p && !found; p = p->next) {
                        if ((pass == 0) == p->finished)
                                continue;
                        if (sel->tag ? (p->tag && strcmp(p->tag, sel->tag) == 0)
                                     : (uint32_t)p->pid == sel->pid)
                                found = p;
                }
        if (found) {
                *ret_pid = (uint32_t)found->pid;
                *ret_log = agent_outlog_ref(found->log);
        }
        pthread_mutex_unlock(&table_lock);
        return found ? 0 : -ESRCH;
}

/* A running (not yet exited) process by pid or tag; call with table_lock held. */
static struct agent_proc *table_find(const struct agent_selector *sel)
{
        for (struct agent_proc *p = table; p; p = p->next) {
                if (p->exited || p->finished)
                        continue;
                if (sel->tag ? (p->tag && strcmp(p->tag, sel->tag) == 0)
                             : (uint32_t)p->pid == sel->pid)
                        return p;
        }
        return NULL;
}

int agent_process_signal(const struct agent_selector *sel, int sig)
{
        struct agent_proc *p;
        int r = 0;

        pthread_mutex_lock(&table_lock);
        p = table_find(sel);
        /* Not exited means not reaped: the pid cannot have been reused. */
        if (p)
                kill_group(p->pid, sig);
        else
                r = -ESRCH;
        pthread_mutex_unlock(&table_lock);
        return r;
}

int agent_process_input_fd(const struct agent_selector *sel, bool *ret_pty, int *ret_fd)
{
        struct agent_proc *p;
        int r = 0;

        pthread_mutex_lock(&table_lock);
        p = table_find(sel);
        if (!p)
                r = -ESRCH;
        else if (p->stdin_fd < 0)
                r = -EBADF;
        else {
                *ret_pty = p->pty;
                r = fcntl(p->stdin_fd, F_DUPFD_CLOEXEC, 3);
                if (r < 0)
                        r = negative_errno();
                else
                        *ret_fd = r;
        }
        pthread_mutex_unlock(&table_lock);
        return r < 0 ? r : 0;
}

int agent_process_close_stdin(const struct agent_selector *sel)
{
        struct agent_proc *p;
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

int agent_process_list_json(char **ret)
{
        cJSON *root = cJSON_CreateObject(), *arr;
        int r = 0;

        if (!root || !(arr = cJSON_AddArrayToObject(root, "processes"))) {
                if (root)
                        cJSON_Delete(root);
                return -ENOMEM;
        }
        pthread_mutex_lock(&table_lock);
        for (struct agent_proc *p = table; p && r == 0; p = p->next) {
                cJSON *o, *cfg;
                if (p->exited || p->finished)
                        continue;
                if (!(o = cJSON_CreateObject()) || !cJSON_AddItemToArray(arr, o) ||
                    !(cfg = cJSON_Duplicate(p->config, 1)) ||
                    !cJSON_AddItemToObject(o, "config", cfg) ||
                    !cJSON_AddNumberToObject(o, "pid", p->pid) ||
                    (p->tag && !cJSON_AddStringToObject(o, "tag", p->tag)))
                        r = -ENOMEM;
        }
        pthread_mutex_unlock(&table_lock);
        /* proto3 JSON omits an empty repeated field, as envd does. */
        if (r == 0 && cJSON_GetArraySize(arr) == 0)
                cJSON_DeleteItemFromObject(root, "processes");
        if (r == 0 && !(*ret = cJSON_PrintUnformatted(root)))
                r = -ENOMEM;
        cJSON_Delete(root);
        return r;
}

/* ---- StartRequest ---- */

struct start_request {
        cJSON *root;
        const cJSON *process;
        const char *cmd;
        const char *cwd; /* NULL when absent */
        const char *tag;
        const cJSON *args;
        const cJSON *envs;
        bool stdin_pipe;
        bool pty;
        unsigned short cols, rows;
};

/* A uint32 PTY.Size field, clamped to what a winsize holds; def when absent or 0. */
static unsigned short pty_dimension(const cJSON *j, unsigned short def)
{
        if (!cJSON_IsNumber(j) || j->valuedouble < 1)
                return def;
        return j->valuedouble > 65535 ? 65535 : (unsigned short)j->valuedouble;
}

/* Validate the JSON and point into it. -EINVAL with a message in *ret_msg. */
static int start_request_parse(const char *json, size_t len, struct start_request *ret,
                               const char **ret_msg)
{
        cJSON *root = cJSON_ParseWithLength(json, len);
        const cJSON *j, *e;
        struct start_request q = {.root = root, .stdin_pipe = true};

        *ret_msg = "invalid StartRequest JSON";
        if (!root || !cJSON_IsObject(root))
                goto bad;
        q.process = cJSON_GetObjectItemCaseSensitive(root, "process");
        if (!cJSON_IsObject(q.process)) {
                *ret_msg = "process config is required";
                goto bad;
        }
        j = cJSON_GetObjectItemCaseSensitive(q.process, "cmd");
        if (!cJSON_IsString(j) || !*j->valuestring) {
                *ret_msg = "process.cmd must be a non-empty string";
                goto bad;
        }
        q.cmd = j->valuestring;
        q.args = cJSON_GetObjectItemCaseSensitive(q.process, "args");
        if (q.args && !cJSON_IsNull(q.args)) {
                if (!cJSON_IsArray(q.args) || (unsigned)cJSON_GetArraySize(q.args) > MAX_ARGS)
                        goto bad;
                cJSON_ArrayForEach(e, q.args)
                {
                        if (!cJSON_IsString(e))
                                goto bad;
                }
        } else
                q.args = NULL;
        q.envs = cJSON_GetObjectItemCaseSensitive(q.process, "envs");
        if (q.envs && !cJSON_IsNull(q.envs)) {
                if (!cJSON_IsObject(q.envs) ||
                    (unsigned)cJSON_GetArraySize(q.envs) > MAX_REQUEST_ENVS)
                        goto bad;
                cJSON_ArrayForEach(e, q.envs)
                {
                        if (!cJSON_IsString(e) || !*e->string || strchr(e->string, '=')) {
                                *ret_msg = "process.envs must map names to strings";
                                goto bad;
                        }
                }
        } else
                q.envs = NULL;
        j = cJSON_GetObjectItemCaseSensitive(q.process, "cwd");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsString(j))
                        goto bad;
                q.cwd = j->valuestring;
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "tag");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsString(j))
                        goto bad;
                q.tag = j->valuestring;
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "stdin");
        if (j && !cJSON_IsNull(j)) {
                if (!cJSON_IsBool(j))
                        goto bad;
                q.stdin_pipe = cJSON_IsTrue(j); /* absent means true, as in envd */
        }
        j = cJSON_GetObjectItemCaseSensitive(root, "pty");
        if (j && !cJSON_IsNull(j)) {
                const cJSON *size = cJSON_GetObjectItemCaseSensitive(j, "size");
                if (!cJSON_IsObject(j) || (size && !cJSON_IsNull(size) && !cJSON_IsObject(size)))
                        goto bad;
                q.pty = true;
                q.cols = pty_dimension(cJSON_GetObjectItemCaseSensitive(size, "cols"), 80);
                q.rows = pty_dimension(cJSON_GetObjectItemCaseSensitive(size, "rows"), 24);
        }
        *ret = q;
        return 0;
bad:
        if (root)
                cJSON_Delete(root);
        return -EINVAL;
}

static const char *spawn_error_code(int e)
{
        switch (e) {
        case -EAGAIN:
        case -ENOMEM:
        case -EMFILE:
        case -ENFILE:
        case -ENOSPC:
                return "resource_exhausted";
        default:
                return "invalid_argument";
        }
}

/* ---- the stream (pump) ---- */

struct pump {
        struct agent_request *r;
        struct agent_proc *proc;
        int out_fd[2]; /* stdout, stderr (or the pty master, alone); -EBADF once at EOF */
        enum agent_output_stream out_kind[2];
        size_t chunk;
        bool attached;
        bool exited;
        int keepalive_ms;
        int64_t next_keepalive;
        int64_t grace_end;
        uint8_t buf[OUTPUT_CHUNK];
};

static void pump_detach(struct pump *p)
{
        if (!p->attached)
                return;
        p->attached = false;
        (void)shutdown(p->r->fd, SHUT_RDWR);
        agent_server_release_slot(p->r);
}

static void pump_send(struct pump *p, int (*build)(char **, size_t *))
{
        _cleanup_free_ char *json = NULL;
        size_t len;

        if (!p->attached)
                return;
        if (build(&json, &len) < 0 || agent_respond_envelope(p->r, 0, json, len) < 0)
                pump_detach(p);
        p->next_keepalive = now_ms() + p->keepalive_ms;
}

static void pump_output(struct pump *p, int i)
{
        _cleanup_free_ char *json = NULL;
        size_t len;
        ssize_t n;

        n = read(p->out_fd[i], p->buf, p->chunk);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        /* A pty master reads EIO once every slave fd is closed: that is its EOF. */
        if (n <= 0) {
                p->out_fd[i] = safe_close(p->out_fd[i]);
                return;
        }
        /* Retained for Connect (bounded); lost only when memory is short. */
        (void)agent_outlog_append(p->proc->log, p->out_kind[i], p->buf, (size_t)n);
        if (!p->attached)
                return; /* nobody listens on Start: Connect streams read the log */
        /* A blocking write: while the client is slow we do not read the pipes, so the
         * process blocks on a full pipe (backpressure) and nothing piles up here. */
        if (cj_event_data(p->out_kind[i], p->buf, (size_t)n, &json, &len) < 0 ||
            agent_respond_envelope(p->r, 0, json, len) < 0) {
                pump_detach(p);
                return;
        }
        p->next_keepalive = now_ms() + p->keepalive_ms;
}

static void pump_check_client(struct pump *p)
{
        char c;
        /* The request (with its END) has been read completely: anything readable now is EOF,
         * an error or a protocol violation. In all cases the client is gone. */
        ssize_t n = recv(p->r->fd, &c, 1, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        pump_detach(p);
}

static void pump_run(struct pump *p)
{
        for (;;) {
                struct pollfd pfd[4] = {
                    {.fd = p->out_fd[0], .events = POLLIN},
                    {.fd = p->out_fd[1], .events = POLLIN},
                    {.fd = p->attached ? p->r->fd : -1, .events = POLLIN | POLLRDHUP},
                    {.fd = p->exited ? -1 : p->proc->exit_efd, .events = POLLIN},
                };
                int64_t now = now_ms();
                int timeout = -1;

                if (p->exited) {
                        if ((p->out_fd[0] < 0 && p->out_fd[1] < 0) || now >= p->grace_end)
                                return;
                        timeout = (int)(p->grace_end - now);
                } else if (p->attached) {
                        if (now >= p->next_keepalive) {
                                pump_send(p, cj_event_keepalive);
                                continue;
                        }
                        timeout = (int)(p->next_keepalive - now);
                }
                if (poll(pfd, ELEMENTSOF(pfd), timeout) < 0) {
                        if (errno == EINTR)
                                continue;
                        return;
                }
                for (int i = 0; i < 2; i++)
                        if (pfd[i].fd >= 0 && pfd[i].revents)
                                pump_output(p, i);
                if (pfd[2].fd >= 0 && pfd[2].revents)
                        pump_check_client(p);
                if (pfd[3].fd >= 0 && pfd[3].revents) {
                        eventfd_t v;
                        (void)eventfd_read(p->proc->exit_efd, &v);
                        p->exited = true;
                        p->grace_end = now_ms() + EXIT_DRAIN_GRACE_MS;
                }
        }
}

static void pump_finish(struct pump *p)
{
        _cleanup_free_ char *json = NULL;
        struct agent_exit ex;
        bool deadline;
        size_t len;

        pthread_mutex_lock(&table_lock);
        ex = p->proc->exit;
        deadline = p->proc->deadline_killed;
        pthread_mutex_unlock(&table_lock);

        if (!p->attached)
                return;
        if (deadline) {
                (void)agent_respond_stream_error(p->r, "deadline_exceeded",
                                                 "process %d killed: timeout exceeded",
                                                 (int)p->proc->pid);
                return;
        }
        if (cj_event_end(&ex, &json, &len) < 0 || agent_respond_envelope(p->r, 0, json, len) < 0)
                return;
        free(json);
        json = NULL;
        if (cj_end_stream_ok(&json, &len) < 0 ||
            agent_respond_envelope(p->r, CONNECT_FLAG_END_STREAM, json, len) < 0)
                return;
        (void)agent_respond_end(p->r);
}

/* ---- Start ---- */

static int start_spawn(struct agent_request *r, struct start_request *q, const struct agent_user *u,
                       int64_t timeout_ms, struct agent_proc **ret_proc,
                       struct agent_spawned *ret_sp)
{
        _cleanup_strv_free_ char **argv = NULL, **envp = NULL;
        _cleanup_free_ char *cwd = NULL, *workdir = NULL;
        struct agent_proc *proc;
        struct stat st;
        int e;

        e = agent_config_default_workdir(&workdir);
        if (e < 0)
                return agent_respond_stream_error(r, "internal", "out of memory");
        e = agent_path_resolve(q->cwd, u->home, workdir, &cwd);
        if (e < 0)
                return agent_respond_stream_error(r, "invalid_argument", "invalid cwd '%s'",
                                                  q->cwd ? q->cwd : "");
        if (stat(cwd, &st) < 0 && errno == ENOENT)
                return agent_respond_stream_error(r, "invalid_argument", "cwd '%s' does not exist",
                                                  cwd);
        if ((e = agent_process_build_argv(q->cmd, q->args, &argv)) < 0 ||
            (e = agent_process_build_env(u, q->envs, &envp)) < 0)
                return agent_respond_stream_error(r, "internal", "out of memory");

        proc = calloc(1, sizeof(*proc));
        if (!proc)
                return agent_respond_stream_error(r, "resource_exhausted", "out of memory");
        proc->stdin_fd = -EBADF;
        proc->exit_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        proc->config = cJSON_Duplicate(q->process, 1);
        proc->tag = q->tag ? strdup(q->tag) : NULL;
        proc->log = agent_outlog_new();
        if (proc->exit_efd < 0 || !proc->config || (q->tag && !proc->tag) || !proc->log) {
                proc_free(proc);
                return agent_respond_stream_error(r, "resource_exhausted",
                                                  "cannot allocate process state");
        }

        struct agent_spawn s = {
            .argv = (const char *const *)argv,
            .envp = (const char *const *)envp,
            .cwd = cwd,
            .user = u,
            .stdin_pipe = q->stdin_pipe,
            .pty = q->pty,
            .cols = q->cols,
            .rows = q->rows,
        };
        /* Fork under the table lock: the reaper must find the pid when the child exits. */
        pthread_mutex_lock(&table_lock);
        e = agent_spawn(&s, ret_sp);
        if (e >= 0) {
                proc->pid = ret_sp->pid;
                proc->stdin_fd = ret_sp->stdin_fd;
                proc->pty = q->pty;
                proc->deadline_ms = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
                proc->next = table;
                table = proc;
        }
        pthread_mutex_unlock(&table_lock);
        if (e < 0) {
                proc_free(proc);
                return agent_respond_stream_error(r, spawn_error_code(e),
                                                  "error starting process '%s': %s", q->cmd,
                                                  strerror(-e));
        }
        if (timeout_ms > 0 && wake_fd >= 0)
                (void)eventfd_write(wake_fd, 1);
        *ret_proc = proc;
        return 1;
}

int agent_process_handle_start(struct agent_request *r)
{
        static const char *const headers[] = {"Content-Type", "application/connect+json", NULL};
        _cleanup_free_ uint8_t *body = NULL;
        _cleanup_free_ char *username = NULL, *start_json = NULL;
        _cleanup_(agent_user_done) struct agent_user u = {0};
        struct start_request q = {0};
        _cleanup_json_ cJSON *root = NULL;
        struct agent_spawned sp;
        struct agent_proc *proc = NULL;
        const uint8_t *msg;
        const char *why;
        uint32_t msg_len;
        int64_t timeout_ms;
        size_t len;
        int e;

        e = agent_request_read_envelope(r, &body, &msg, &msg_len);
        if (e <= 0)
                return e;
        if (start_request_parse((const char *)msg, msg_len, &q, &why) < 0)
                return agent_respond_stream_error(r, "invalid_argument", "%s", why);
        root = q.root;

        e = agent_request_user(r, NULL, &u, &username);
        if (e == -ENOENT || e == -EINVAL)
                return agent_respond_stream_error(r, "unauthenticated", "invalid username: '%s'",
                                                  username ? username : "");
        if (e < 0)
                return agent_respond_stream_error(r, "internal", "user lookup: %s", strerror(-e));
        if (agent_parse_connect_timeout(agent_request_header(r, "Connect-Timeout-Ms"),
                                        &timeout_ms) < 0)
                return agent_respond_stream_error(r, "invalid_argument",
                                                  "invalid Connect-Timeout-Ms header");

        e = start_spawn(r, &q, &u, timeout_ms, &proc, &sp);
        if (e <= 0)
                return e;

        /* On the connection thread's stack (512 KiB): nothing here can fail after the spawn. */
        struct pump pump = {
            .r = r,
            .proc = proc,
            .out_fd = {sp.stdout_fd, sp.stderr_fd},
            .out_kind = {q.pty ? AGENT_OUT_PTY : AGENT_OUT_STDOUT, AGENT_OUT_STDERR},
            .chunk = q.pty ? PTY_CHUNK : OUTPUT_CHUNK,
            .attached = true,
            .keepalive_ms =
                agent_parse_keepalive(agent_request_header(r, "Keepalive-Ping-Interval")) * 1000,
        };
        struct pump *p = &pump;
        p->next_keepalive = now_ms() + p->keepalive_ms;

        if (agent_respond_head(r, 200, headers) < 0 ||
            cj_event_start((uint32_t)proc->pid, &start_json, &len) < 0 ||
            agent_respond_envelope(r, 0, start_json, len) < 0)
                pump_detach(p);

        pump_run(p);
        pump_finish(p);

        safe_close(p->out_fd[0]);
        safe_close(p->out_fd[1]);
        table_retire(proc);
        return 0;
}
