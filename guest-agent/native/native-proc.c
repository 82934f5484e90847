/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Managed processes (native API): processes of the table kept after their request ended. A
 * thread per process pumps it (agent_proc_run()) and turns its events into a bounded log
 * (stdout and stderr interleaved as produced; the last NATIVE_LOG_MAX bytes are kept, offsets
 * stay absolute) and its exit status. At most NATIVE_MAX_PROCS entries: starting another
 * drops the oldest exited one, or is refused while all run.
 *
 * A process started with "stdin": true reads a pipe that POST /v1/processes/{pid}/stdin writes
 * (the body's bytes as they arrive, each write waiting at most NATIVE_STDIN_WAIT_MS for a
 * process that does not read; ?close=true closes it after them); otherwise its stdin is
 * /dev/null. GET /v1/processes/{pid}?wait_ms=N answers once the process has exited or after N
 * ms (at most NATIVE_WAIT_MAX_MS), whichever comes first.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "json-util.h"
#include "macros.h"
#include "native/native.h"
#include "proc/process.h"
#include "thread-util.h"
#include "time-util.h"

#define NATIVE_LOG_MAX       (1024u * 1024u)
#define NATIVE_MAX_PROCS     64u
#define NATIVE_STDIN_WAIT_MS 30000 /* a stdin write waits this long for a process to read */
#define NATIVE_WAIT_MAX_MS   50000 /* longest wait_ms (below sbxd's relay timeout, 60 s) */

struct mproc {
        struct mproc *next;
        int pid;
        cJSON *cmd;                   /* the request's cmd, as given */
        int64_t started_at, ended_at; /* unix ms */
        bool running;
        bool stdin_pipe; /* started with "stdin": true */
        int exit_code;
        char status[96];
        uint8_t *log;
        size_t log_len;
        uint64_t log_base;    /* absolute offset of log[0] */
        struct agent_proc *h; /* until its thread runs it */
        unsigned refs;        /* table + pump thread + followers; under lock */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static struct mproc *procs;

static int64_t unix_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Call with lock held. */
static void mproc_unref(struct mproc *p)
{
        if (--p->refs > 0)
                return;
        cJSON_Delete(p->cmd);
        free(p->log);
        free(p);
}

static void log_append(struct mproc *p, const uint8_t *d, size_t n)
{
        if (n >= NATIVE_LOG_MAX) {
                p->log_base += p->log_len + (n - NATIVE_LOG_MAX);
                d += n - NATIVE_LOG_MAX;
                n = NATIVE_LOG_MAX;
                p->log_len = 0;
        } else if (p->log_len + n > NATIVE_LOG_MAX) {
                size_t drop = p->log_len + n - NATIVE_LOG_MAX;
                memmove(p->log, p->log + drop, p->log_len - drop);
                p->log_len -= drop;
                p->log_base += drop;
        }
        memcpy(p->log + p->log_len, d, n);
        p->log_len += n;
}

static int mproc_output(void *userdata, enum agent_output_stream stream, const uint8_t *buf,
                        size_t len)
{
        struct mproc *p = userdata;

        pthread_mutex_lock(&lock);
        log_append(p, buf, len);
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
        return 0;
}

static int mproc_exited(void *userdata, const struct agent_exit *ex, bool deadline_killed)
{
        struct mproc *p = userdata;

        pthread_mutex_lock(&lock);
        p->exit_code = ex->exit_code;
        snprintf(p->status, sizeof(p->status), "%s", ex->status);
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
        return 0;
}

/* Pump the process to its end (on the calling thread), then mark it exited. */
static void mproc_run(struct mproc *p)
{
        const struct agent_proc_listener l = {
            .userdata = p,
            .output = mproc_output,
            .exited = mproc_exited,
        };
        struct agent_proc *h = TAKE_PTR(p->h);

        (void)agent_proc_run(h, &l);
        pthread_mutex_lock(&lock);
        p->running = false;
        p->ended_at = unix_ms();
        pthread_cond_broadcast(&changed);
        mproc_unref(p);
        pthread_mutex_unlock(&lock);
}

static void *pump_thread(void *arg)
{
        mproc_run(arg);
        return NULL;
}

/* Find by pid (lock held). */
static struct mproc *find(int pid)
{
        for (struct mproc *p = procs; p; p = p->next)
                if (p->pid == pid)
                        return p;
        return NULL;
}

static void unlink_proc(struct mproc *p)
{
        for (struct mproc **pp = &procs; *pp; pp = &(*pp)->next)
                if (*pp == p) {
                        *pp = p->next;
                        mproc_unref(p);
                        return;
                }
}

/* Make room for one more (lock held): -EBUSY when every entry still runs. */
static int make_room(void)
{
        unsigned n = 0;
        struct mproc *oldest = NULL;
        for (struct mproc *p = procs; p; p = p->next) {
                n++;
                if (!p->running && (!oldest || p->ended_at < oldest->ended_at))
                        oldest = p;
        }
        if (n < NATIVE_MAX_PROCS)
                return 0;
        if (!oldest)
                return -EBUSY;
        unlink_proc(oldest);
        return 0;
}

static cJSON *proc_json(const struct mproc *p)
{
        cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddNumberToObject(o, "pid", p->pid) ||
            !cJSON_AddItemToObject(o, "cmd", cJSON_Duplicate(p->cmd, 1)) ||
            !cJSON_AddStringToObject(o, "status", p->running ? "running" : "exited") ||
            !cJSON_AddBoolToObject(o, "stdin", p->stdin_pipe) ||
            !(p->running ? cJSON_AddNullToObject(o, "exit_code")
                         : cJSON_AddNumberToObject(o, "exit_code", p->exit_code)) ||
            !cJSON_AddNumberToObject(o, "started_at_ms", (double)p->started_at) ||
            !(p->running ? cJSON_AddNullToObject(o, "ended_at_ms")
                         : cJSON_AddNumberToObject(o, "ended_at_ms", (double)p->ended_at)) ||
            !cJSON_AddNumberToObject(o, "log_bytes", (double)(p->log_base + p->log_len))) {
                cJSON_Delete(o);
                return NULL;
        }
        return o;
}

static int start_pump(struct mproc *p)
{
        return thread_start_detached(pump_thread, p, 256u * 1024u);
}

/* The mproc for an accepted request, the process not yet started. */
static struct mproc *mproc_new(const cJSON *cmd)
{
        struct mproc *p = calloc(1, sizeof(*p));

        if (!p || !(p->log = malloc(NATIVE_LOG_MAX)) || !(p->cmd = cJSON_Duplicate(cmd, 1))) {
                if (p)
                        free(p->log);
                free(p);
                return NULL;
        }
        return p;
}

/* Room for one more managed process (the oldest finished one dropped if need be), else the 409
 * answered: native_spawn()'s admit. */
static int admit_proc(struct agent_request *r)
{
        pthread_mutex_lock(&lock);
        int e = make_room();
        pthread_mutex_unlock(&lock);
        if (e == -EBUSY)
                return native_error(r, 409, "conflict", "%u managed processes are running already",
                                    NATIVE_MAX_PROCS);
        return 0;
}

int native_proc_handle_start(struct agent_request *r)
{
        _cleanup_json_ cJSON *body = NULL, *o = NULL;
        _cleanup_strv_free_ char **argv = NULL;
        const char *msg = "invalid cmd", *user;
        struct mproc *p;
        int e;

        if ((e = native_read_json(r, &body)) != 0)
                return e;
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(body, "cmd");
        const cJSON *cwd = cJSON_GetObjectItemCaseSensitive(body, "cwd");
        const cJSON *env = cJSON_GetObjectItemCaseSensitive(body, "env");
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(body, "user");
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(body, "stdin");
        if ((e = native_argv(cmd, &argv, &msg)) < 0)
                e = native_error(r, 400, "bad_request", "%s", msg);
        else if (cwd && !cJSON_IsNull(cwd) && !cJSON_IsString(cwd))
                e = native_error(r, 400, "bad_request", "cwd must be a string");
        else if (env && !cJSON_IsNull(env) && !cJSON_IsObject(env))
                e = native_error(r, 400, "bad_request", "env must be an object of strings");
        else if (in && !cJSON_IsNull(in) && !cJSON_IsBool(in))
                e = native_error(r, 400, "bad_request", "stdin must be a boolean");
        else if (native_user_name(cJSON_IsString(u) ? u->valuestring : NULL, &user) < 0)
                e = native_error(r, 400, "bad_request", "user must be \"user\" or \"root\"");
        else if (!(p = mproc_new(cmd)))
                e = native_error(r, 500, "internal", "out of memory");
        else
                e = 0;
        if (e != 0)
                return e;
        struct agent_proc_spec spec = {
            .argv = (const char *const *)argv,
            .cwd = cJSON_IsString(cwd) ? cwd->valuestring : NULL,
            .envs = cJSON_IsObject(env) ? env : NULL,
            .stdin_pipe = cJSON_IsTrue(in),
        };
        p->stdin_pipe = spec.stdin_pipe;
        e = native_spawn(r, user, &spec, spec.envs, spec.cwd, "", admit_proc, &p->h);
        if (e != 0) {
                p->refs = 1;
                pthread_mutex_lock(&lock);
                mproc_unref(p);
                pthread_mutex_unlock(&lock);
                return e;
        }
        p->pid = agent_proc_pid(p->h);
        p->running = true;
        p->started_at = unix_ms();
        p->refs = 2; /* table + pump */
        pthread_mutex_lock(&lock);
        p->next = procs;
        procs = p;
        o = proc_json(p);
        pthread_mutex_unlock(&lock);
        if (start_pump(p) < 0) {
                /* No thread for it: it does not run unattended. Killed, then pumped here. */
                (void)agent_proc_signal(&(struct agent_selector){.pid = (uint32_t)p->pid}, SIGKILL);
                mproc_run(p);
        }
        return o ? native_json(r, 201, o) : native_error(r, 500, "internal", "out of memory");
}

int native_proc_handle_list(struct agent_request *r)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *arr = o ? cJSON_AddArrayToObject(o, "processes") : NULL;

        (void)agent_request_discard_body(r, 64 * 1024);
        pthread_mutex_lock(&lock);
        for (struct mproc *p = procs; p && arr; p = p->next)
                cJSON_AddItemToArray(arr, proc_json(p));
        pthread_mutex_unlock(&lock);
        return arr ? native_json(r, 200, o) : native_error(r, 500, "internal", "out of memory");
}

static int parse_signal(const cJSON *s)
{
        static const struct {
                const char *name;
                int sig;
        } names[] = {{"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT},
                     {"HUP", SIGHUP},   {"QUIT", SIGQUIT}, {"USR1", SIGUSR1},
                     {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT}};
        if (!s || cJSON_IsNull(s))
                return SIGTERM;
        if (cJSON_IsNumber(s))
                return s->valueint >= 1 && s->valueint <= 64 ? s->valueint : -EINVAL;
        if (!cJSON_IsString(s))
                return -EINVAL;
        const char *n = s->valuestring;
        if (strncmp(n, "SIG", 3) == 0)
                n += 3;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcmp(n, names[i].name) == 0)
                        return names[i].sig;
        return -EINVAL;
}

static int handle_signal(struct agent_request *r, int pid, int sig_override)
{
        _cleanup_json_ cJSON *body = NULL;
        int e, sig = sig_override;
        if (sig == 0) {
                if ((e = native_read_json(r, &body)) != 0)
                        return e;
                sig = parse_signal(cJSON_GetObjectItemCaseSensitive(body, "signal"));
                if (sig < 0)
                        return native_error(r, 400, "bad_request",
                                            "signal must be a name (SIGTERM, SIGKILL, SIGINT, "
                                            "...) or a number");
        } else
                (void)agent_request_discard_body(r, 64 * 1024);
        pthread_mutex_lock(&lock);
        struct mproc *p = find(pid);
        bool running = p && p->running;
        pthread_mutex_unlock(&lock);
        if (!p)
                return native_error(r, 404, "not_found", "no managed process %d", pid);
        if (!running)
                return native_error(r, 409, "conflict", "process %d has already exited", pid);
        e = agent_proc_signal(&(struct agent_selector){.pid = (uint32_t)pid}, sig);
        if (e < 0)
                return native_error(r, 409, "conflict", "process %d has already exited", pid);
        return agent_respond(r, 204, NULL, NULL, 0);
}

/* Send the log from offset; with follow keep sending until the process ended and the log
 * is drained, or the client left. */
static int send_logs(struct agent_request *r, struct mproc *p, uint64_t offset, bool follow)
{
        static const char *const hs[] = {"Content-Type", "text/plain; charset=utf-8", NULL};
        int e = agent_respond_head(r, 200, hs);
        while (e >= 0) {
                pthread_mutex_lock(&lock);
                if (offset < p->log_base)
                        offset = p->log_base;
                size_t avail = (size_t)(p->log_base + p->log_len - offset);
                _cleanup_free_ uint8_t *chunk = avail ? malloc(avail) : NULL;
                if (chunk)
                        memcpy(chunk, p->log + (offset - p->log_base), avail);
                bool running = p->running;
                if (!avail && running && follow) {
                        struct timespec ts;
                        clock_gettime(CLOCK_REALTIME, &ts);
                        ts.tv_sec += 1;
                        pthread_cond_timedwait(&changed, &lock, &ts);
                }
                pthread_mutex_unlock(&lock);
                if (chunk) {
                        e = agent_respond_data(r, chunk, avail);
                        offset += avail;
                        continue;
                }
                if (!follow || !running)
                        break;
                struct pollfd pf = {.fd = r->fd, .events = POLLRDHUP};
                if (poll(&pf, 1, 0) > 0)
                        return -ECONNRESET;
        }
        return e < 0 ? e : agent_respond_end(r);
}

static int handle_logs(struct agent_request *r, int pid)
{
        _cleanup_free_ char *off = native_query(r, "offset"), *fol = native_query(r, "follow");
        uint64_t offset = off ? strtoull(off, NULL, 10) : 0;
        bool follow = fol && (strcmp(fol, "true") == 0 || strcmp(fol, "1") == 0);
        (void)agent_request_discard_body(r, 64 * 1024);
        pthread_mutex_lock(&lock);
        struct mproc *p = find(pid);
        if (p)
                p->refs++;
        pthread_mutex_unlock(&lock);
        if (!p)
                return native_error(r, 404, "not_found", "no managed process %d", pid);
        int e = send_logs(r, p, offset, follow);
        pthread_mutex_lock(&lock);
        mproc_unref(p);
        pthread_mutex_unlock(&lock);
        return e;
}

/* Wait (lock held) until process pid has exited, wait_ms passed or the client left. */
static void wait_exit(struct agent_request *r, int pid, int64_t wait_ms)
{
        int64_t deadline = now_ms() + wait_ms;
        struct mproc *p = find(pid);
        if (!p)
                return;
        p->refs++; /* a DELETE may unlink it meanwhile */
        while (p->running) {
                int64_t left = deadline - now_ms();
                if (left <= 0)
                        break;
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                int64_t ns = ts.tv_nsec + MIN(left, 1000) * 1000000;
                ts.tv_sec += ns / 1000000000;
                ts.tv_nsec = ns % 1000000000;
                pthread_cond_timedwait(&changed, &lock, &ts);
                struct pollfd pf = {.fd = r->fd, .events = POLLRDHUP};
                if (poll(&pf, 1, 0) > 0)
                        break; /* sbxd hung up: nobody waits for the answer */
        }
        mproc_unref(p);
}

static int handle_get(struct agent_request *r, int pid, bool remove)
{
        _cleanup_free_ char *w = remove ? NULL : native_query(r, "wait_ms");
        char *end = NULL;
        long wait_ms = w ? strtol(w, &end, 10) : 0;
        if (w && (!*w || *end || wait_ms < 0 || wait_ms > NATIVE_WAIT_MAX_MS))
                return native_error(r, 400, "bad_request", "wait_ms must be 0..%d",
                                    NATIVE_WAIT_MAX_MS);
        (void)agent_request_discard_body(r, 64 * 1024);
        pthread_mutex_lock(&lock);
        if (wait_ms > 0)
                wait_exit(r, pid, wait_ms);
        struct mproc *p = find(pid);
        _cleanup_json_ cJSON *o = p ? proc_json(p) : NULL;
        if (p && remove && !p->running)
                unlink_proc(p);
        pthread_mutex_unlock(&lock);
        if (!p)
                return native_error(r, 404, "not_found", "no managed process %d", pid);
        return o ? native_json(r, 200, o) : native_error(r, 500, "internal", "out of memory");
}

static int stdin_fail(struct agent_request *r, int pid, int e)
{
        switch (-e) {
        case ESRCH:
                return native_error(r, 409, "conflict", "process %d has already exited", pid);
        case EBADF:
        case EPIPE:
                return native_error(r, 409, "conflict", "the stdin of process %d is closed", pid);
        case ETIMEDOUT:
                return native_error(r, 504, "timeout",
                                    "process %d did not read its stdin for %d ms", pid,
                                    NATIVE_STDIN_WAIT_MS);
        default:
                return native_error(r, 500, "internal", "writing to process %d: %s", pid,
                                    strerror(-e));
        }
}

/* POST /v1/processes/{pid}/stdin[?close=true]: the body's bytes to the process's stdin pipe as
 * they arrive (nothing is buffered here), then EOF when asked. */
static int handle_stdin(struct agent_request *r, int pid)
{
        _cleanup_free_ char *cl = native_query(r, "close");
        const struct agent_selector sel = {.pid = (uint32_t)pid};
        bool close_after = cl && (strcmp(cl, "true") == 0 || strcmp(cl, "1") == 0);
        pthread_mutex_lock(&lock);
        struct mproc *p = find(pid);
        bool running = p && p->running, piped = p && p->stdin_pipe;
        pthread_mutex_unlock(&lock);
        if (!p)
                return native_error(r, 404, "not_found", "no managed process %d", pid);
        if (!piped)
                return native_error(r, 409, "conflict",
                                    "process %d was started without \"stdin\": true", pid);
        if (!running)
                return stdin_fail(r, pid, -ESRCH);
        for (;;) {
                const uint8_t *buf;
                size_t len;
                int e = agent_request_read_body(r, &buf, &len);
                if (e < 0)
                        return e;
                if (e == 0)
                        break;
                e = agent_proc_write_input(&sel, false, buf, len, r->fd, NATIVE_STDIN_WAIT_MS);
                if (e == -ECONNRESET)
                        return e; /* the client left: nobody to answer */
                if (e < 0)
                        return stdin_fail(r, pid, e);
        }
        if (close_after) {
                /* -ESRCH: it exited once it had read what was written (it was running when the
                 * request came), and its stdin went with it: everything asked is done */
                int e = agent_proc_close_stdin(&sel);
                if (e < 0 && e != -ESRCH)
                        return stdin_fail(r, pid, e);
        }
        return agent_respond(r, 204, NULL, NULL, 0);
}

int native_proc_handle_item(struct agent_request *r)
{
        static const char pre[] = "/v1/processes";
        const char *m = r->head.method, *p = r->head.path + sizeof(pre) - 1;
        char *end;

        /* The route table sends only paths under pre here, POST and GET of the list excepted. */
        if (*p == 0 || strcmp(p, "/") == 0)
                return native_handle_not_found(r);
        long pid = strtol(p + 1, &end, 10);
        if (*p != '/' || end == p + 1 || pid <= 0 || pid > 1 << 22)
                return native_error(r, 404, "not_found", "no such process");
        if (*end == 0 && streq_ptr(m, "GET"))
                return handle_get(r, (int)pid, false);
        if (*end == 0 && streq_ptr(m, "DELETE")) {
                pthread_mutex_lock(&lock);
                struct mproc *x = find((int)pid);
                bool running = x && x->running;
                pthread_mutex_unlock(&lock);
                if (x && !running)
                        return handle_get(r, (int)pid, true); /* forget an exited one */
                return handle_signal(r, (int)pid, SIGKILL);
        }
        if (strcmp(end, "/logs") == 0 && streq_ptr(m, "GET"))
                return handle_logs(r, (int)pid);
        if (strcmp(end, "/signal") == 0 && streq_ptr(m, "POST"))
                return handle_signal(r, (int)pid, 0);
        if (strcmp(end, "/stdin") == 0 && streq_ptr(m, "POST"))
                return handle_stdin(r, (int)pid);
        return native_handle_not_found(r);
}
