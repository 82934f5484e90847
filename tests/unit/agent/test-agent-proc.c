/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process table's C API (proc/process.h) without any protocol on top: spawn, the events a
 * listener hears (started, output by stream, exited with its status), the deadline, signals,
 * input, closing stdin, stdin_data, pty resizes, a listener that detaches or watches fds of
 * its own, and attaching to a running and to a finished process with the retained output
 * replayed. A reaper thread stands in for PID 1. Needs root (spawning switches credentials).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "proc/process.h"
#include "test-reaper.h"
#include "unit.h"

/* What a listener heard, in order: "S" started, "1:"/"2:"/"P:" + bytes for output, "E" exit. */
struct heard {
        struct buf log;
        struct buf out[3]; /* by enum agent_output_stream */
        pid_t pid;
        int started, exited;
        struct agent_exit ex;
        bool deadline;
        int exit_result; /* what exited() returns */
        /* optional actions */
        int (*on_started)(struct heard *h);
        int (*on_output)(struct heard *h);
        int detach_after_output; /* output returns this (0: go on) */
        int pipe_fd;             /* a listener fd (-1: none) */
        int dispatched;
        pthread_mutex_t lock;
        pthread_cond_t cond;
};

static void heard_init(struct heard *h)
{
        *h = (struct heard){.pipe_fd = -1, .exit_result = 0};
        pthread_mutex_init(&h->lock, NULL);
        pthread_cond_init(&h->cond, NULL);
}

static void heard_done(struct heard *h)
{
        buf_done(&h->log);
        for (int i = 0; i < 3; i++)
                buf_done(&h->out[i]);
        pthread_mutex_destroy(&h->lock);
        pthread_cond_destroy(&h->cond);
}

static int on_started(void *ud, pid_t pid)
{
        struct heard *h = ud;
        h->pid = pid;
        h->started++;
        buf_adds(&h->log, "S");
        return h->on_started ? h->on_started(h) : 0;
}

static int on_output(void *ud, enum agent_output_stream s, const uint8_t *b, size_t n)
{
        struct heard *h = ud;
        pthread_mutex_lock(&h->lock);
        buf_add(&h->out[s], b, n);
        buf_printf(&h->log, "%c:", "12P"[s]);
        buf_add(&h->log, b, n);
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
        if (h->on_output) {
                int r = h->on_output(h);
                if (r)
                        return r;
        }
        return h->detach_after_output;
}

static int on_exited(void *ud, const struct agent_exit *ex, bool deadline)
{
        struct heard *h = ud;
        h->exited++;
        h->ex = *ex;
        h->deadline = deadline;
        buf_adds(&h->log, "E");
        return h->exit_result;
}

static int on_prepare(void *ud, struct pollfd fds[AGENT_PROC_LISTENER_FDS], int *timeout)
{
        struct heard *h = ud;
        fds[0] = (struct pollfd){.fd = h->pipe_fd, .events = POLLIN};
        return 0;
}

static int on_dispatch(void *ud, const struct pollfd fds[AGENT_PROC_LISTENER_FDS])
{
        struct heard *h = ud;
        if (fds[0].fd >= 0 && (fds[0].revents & POLLIN)) {
                h->dispatched++;
                (void)agent_proc_signal(&(struct agent_selector){.pid = (uint32_t)h->pid}, SIGKILL);
                return -ECANCELED;
        }
        return 0;
}

static struct agent_proc_listener listener(struct heard *h)
{
        return (struct agent_proc_listener){.userdata = h,
                                            .started = on_started,
                                            .output = on_output,
                                            .exited = on_exited,
                                            .prepare = on_prepare,
                                            .dispatch = on_dispatch};
}

static struct agent_user root_user;

/* Spawn argv with spec defaults and run it with h listening; returns run's result. */
static int run(struct agent_proc_spec *spec, struct heard *h)
{
        char err[AGENT_PROC_ERR_MAX];
        struct agent_proc *p = NULL;
        spec->user = &root_user;
        int e = agent_proc_spawn(spec, &p, err);
        CHECK_EQ_INT(e, 0);
        if (e < 0) {
                fprintf(stderr, "spawn: %s\n", err);
                return e;
        }
        const struct agent_proc_listener l = listener(h);
        return agent_proc_run(p, &l);
}

/* What a process started as u holds: root exactly core/users.h's six (agent_user_caps), kept
 * across exec by its children; anyone else nothing. */
static void test_caps(void)
{
        const char *argv[] = {"/bin/sh", "-c",
                              "sh -c 'grep -E \"^Cap(Inh|Prm|Eff|Bnd|Amb):\" /proc/self/status'",
                              NULL};
        struct agent_user nobody = {0};
        struct heard h;

        struct agent_proc_spec spec = {.argv = argv, .cwd = "/"};
        heard_init(&h);
        CHECK_EQ_INT(run(&spec, &h), 0);
        CHECK_STREQ(buf_str(&h.out[AGENT_OUT_STDOUT]), "CapInh:\t0000000000000000\n"
                                                       "CapPrm:\t00000000000000db\n"
                                                       "CapEff:\t00000000000000db\n"
                                                       "CapBnd:\t00000000000000db\n"
                                                       "CapAmb:\t0000000000000000\n");
        heard_done(&h);

        if (agent_user_lookup("nobody", &nobody) < 0) {
                fprintf(stderr, "test-agent-proc: no user nobody here: its caps unchecked\n");
                return;
        }
        char err[AGENT_PROC_ERR_MAX];
        struct agent_proc *p = NULL;
        spec = (struct agent_proc_spec){.argv = argv, .cwd = "/", .user = &nobody};
        CHECK_EQ_INT(agent_proc_spawn(&spec, &p, err), 0);
        heard_init(&h);
        const struct agent_proc_listener l = listener(&h);
        if (p)
                CHECK_EQ_INT(agent_proc_run(p, &l), 0);
        CHECK_STREQ(buf_str(&h.out[AGENT_OUT_STDOUT]), "CapInh:\t0000000000000000\n"
                                                       "CapPrm:\t0000000000000000\n"
                                                       "CapEff:\t0000000000000000\n"
                                                       "CapBnd:\t0000000000000000\n"
                                                       "CapAmb:\t0000000000000000\n");
        heard_done(&h);
        agent_user_done(&nobody);
}

static void test_events(void)
{
        const char *argv[] = {"/bin/sh", "-c", "printf out; printf err >&2; exit 3", NULL};
        struct agent_proc_spec spec = {.argv = argv};
        struct heard h;

        heard_init(&h);
        h.exit_result = 42;
        CHECK_EQ_INT(run(&spec, &h), 42); /* exited()'s answer is run's result */
        CHECK(h.pid > 0);
        CHECK_EQ_INT(h.started, 1);
        CHECK_EQ_INT(h.exited, 1);
        CHECK_STREQ(buf_str(&h.out[AGENT_OUT_STDOUT]), "out");
        CHECK_STREQ(buf_str(&h.out[AGENT_OUT_STDERR]), "err");
        CHECK(buf_str(&h.log)[0] == 'S' && buf_str(&h.log)[h.log.len - 1] == 'E');
        CHECK_EQ_INT(h.ex.exit_code, 3);
        CHECK(h.ex.exited);
        CHECK_STREQ(h.ex.status, "exit status 3");
        CHECK(!h.deadline);
        heard_done(&h);

        /* Environment (the spec's envs after the defaults) and the working directory. */
        const char *argv2[] = {"sh", "-c", "printf %s:%s:%s \"$X\" \"$PWD\" \"$USER\"", NULL};
        cJSON *envs = cJSON_Parse("{\"X\":\"y\"}");
        spec = (struct agent_proc_spec){.argv = argv2, .envs = envs, .cwd = "/tmp"};
        heard_init(&h);
        CHECK_EQ_INT(run(&spec, &h), 0);
        CHECK_STREQ(buf_str(&h.out[AGENT_OUT_STDOUT]), "y:/tmp:root");
        heard_done(&h);
        cJSON_Delete(envs);

        /* A missing program: started, its stderr line, exit 127, as a shell's child. */
        const char *argv3[] = {"/nonexistent/x", NULL};
        spec = (struct agent_proc_spec){.argv = argv3};
        heard_init(&h);
        run(&spec, &h);
        CHECK_EQ_INT(h.ex.exit_code, 127);
        CHECK(strstr(buf_str(&h.out[AGENT_OUT_STDERR]), "/nonexistent/x") != NULL);
        heard_done(&h);

        /* A missing cwd is refused before anything runs. */
        char err[AGENT_PROC_ERR_MAX];
        struct agent_proc *p = NULL;
        const char *argv4[] = {"true", NULL};
        spec = (struct agent_proc_spec){.argv = argv4, .cwd = "/nonexistent", .user = &root_user};
        CHECK_EQ_INT(agent_proc_spawn(&spec, &p, err), -ENOENT);
        CHECK_STREQ(err, "cwd '/nonexistent' does not exist");
        spec.cwd = "~bob";
        CHECK_EQ_INT(agent_proc_spawn(&spec, &p, err), -EINVAL);
        CHECK_STREQ(err, "invalid cwd '~bob'");
}

static int kill_term(struct heard *h)
{
        return agent_proc_signal(&(struct agent_selector){.pid = (uint32_t)h->pid}, SIGTERM);
}

static void test_signal_and_deadline(void)
{
        const char *argv[] = {"sleep", "30", NULL};
        struct agent_proc_spec spec = {.argv = argv, .tag = "s1"};
        struct heard h;

        heard_init(&h);
        h.on_started = kill_term;
        run(&spec, &h);
        CHECK_STREQ(h.ex.status, "signal: terminated");
        CHECK_EQ_INT(h.ex.exit_code, -1);
        CHECK(!h.ex.exited);
        heard_done(&h);
        /* Exited: not selectable any more. */
        CHECK_EQ_INT(agent_proc_signal(&(struct agent_selector){.tag = "s1"}, SIGTERM), -ESRCH);

        spec = (struct agent_proc_spec){.argv = argv, .timeout_ms = 100};
        heard_init(&h);
        run(&spec, &h);
        CHECK(h.deadline);
        CHECK_STREQ(h.ex.status, "signal: killed");
        heard_done(&h);
}

static int write_then_close(struct heard *h)
{
        const struct agent_selector sel = {.pid = (uint32_t)h->pid};
        pid_t pid = 0;

        CHECK_EQ_INT(agent_proc_find(&sel, &pid), 0);
        CHECK_EQ_INT(pid, h->pid);
        CHECK_EQ_INT(agent_proc_write_input(&sel, true, "x", 1, -1, 1000), -ENOTTY);
        CHECK_EQ_INT(agent_proc_resize(&sel, 10, 10), -ENOTTY);
        CHECK_EQ_INT(agent_proc_write_input(&sel, false, "hello", 5, -1, 1000), 0);
        CHECK_EQ_INT(agent_proc_close_stdin(&sel), 0);
        CHECK_EQ_INT(agent_proc_close_stdin(&sel), 0); /* idempotent */
        CHECK_EQ_INT(agent_proc_write_input(&sel, false, "x", 1, -1, 1000), -EBADF);
        return 0;
}

static int resize_then_enter(struct heard *h)
{
        const struct agent_selector sel = {.pid = (uint32_t)h->pid};

        CHECK_EQ_INT(agent_proc_resize(&sel, 100, 30), 0);
        CHECK_EQ_INT(agent_proc_close_stdin(&sel), -ENOTTY);
        CHECK_EQ_INT(agent_proc_write_input(&sel, false, "x", 1, -1, 1000), -ENOTTY);
        CHECK_EQ_INT(agent_proc_write_input(&sel, true, "\n", 1, -1, 1000), 0);
        return 0;
}

static void test_input(void)
{
        const char *cat[] = {"cat", NULL};
        struct agent_proc_spec spec = {.argv = cat, .stdin_pipe = true};
        struct heard h;

        heard_init(&h);
        h.on_started = write_then_close;
        CHECK_EQ_INT(run(&spec, &h), 0);
        CHECK_STREQ(buf_str(&h.out[AGENT_OUT_STDOUT]), "hello");
        CHECK_EQ_INT(h.ex.exit_code, 0);
        heard_done(&h);

        /* stdin_data: fed by the pump in parts, then stdin is closed (cat ends). */
        char abc[] = "abc", none[] = "", def[] = "def";
        const struct iovec data[] = {{.iov_base = abc, .iov_len = 3},
                                     {.iov_base = none, .iov_len = 0},
                                     {.iov_base = def, .iov_len = 3}};
        spec = (struct agent_proc_spec){
            .argv = cat, .stdin_pipe = true, .stdin_data = data, .n_stdin_data = 3};
        heard_init(&h);
        CHECK_EQ_INT(run(&spec, &h), 0);
        CHECK_STREQ(buf_str(&h.out[AGENT_OUT_STDOUT]), "abcdef");
        heard_done(&h);

        /* More than a pipe holds, while the process also writes: no deadlock. */
        size_t big = 1u << 20;
        char *b = malloc(big);
        memset(b, 'z', big);
        const struct iovec one[] = {{.iov_base = b, .iov_len = big}};
        spec.stdin_data = one;
        spec.n_stdin_data = 1;
        heard_init(&h);
        CHECK_EQ_INT(run(&spec, &h), 0);
        CHECK_EQ_INT(h.out[AGENT_OUT_STDOUT].len, big);
        heard_done(&h);
        free(b);

        /* A pty: one terminal for all three, resized, its output as AGENT_OUT_PTY. */
        const char *sh[] = {"sh", "-c", "test -t 0 && test -t 2 && read x && stty size", NULL};
        spec = (struct agent_proc_spec){.argv = sh, .pty = true, .cols = 80, .rows = 24};
        heard_init(&h);
        h.on_started = resize_then_enter;
        CHECK_EQ_INT(run(&spec, &h), 0);
        CHECK(strstr(buf_str(&h.out[AGENT_OUT_PTY]), "30 100") != NULL);
        CHECK_EQ_INT(h.out[AGENT_OUT_STDOUT].len, 0);
        CHECK_EQ_INT(h.ex.exit_code, 0);
        heard_done(&h);
}

static void test_detach(void)
{
        const char *argv[] = {"sh", "-c", "printf a; sleep 0.2; printf b", NULL};
        struct agent_proc_spec spec = {.argv = argv};
        struct heard h;

        /* A listener that stops after the first output: no more callbacks, the process runs on
         * to its end, drained into its log. */
        heard_init(&h);
        h.detach_after_output = 7;
        CHECK_EQ_INT(run(&spec, &h), 7);
        CHECK(strncmp(buf_str(&h.log), "S1:a", 4) == 0);
        CHECK(strchr(buf_str(&h.log), 'E') == NULL);
        CHECK_EQ_INT(h.exited, 0);
        heard_done(&h);

        /* A listener's own fd: readable, it kills the process and detaches. */
        int p[2];
        CHECK_EQ_INT(pipe(p), 0);
        CHECK_EQ_INT(write(p[1], "x", 1), 1);
        const char *sleep30[] = {"sleep", "30", NULL};
        spec = (struct agent_proc_spec){.argv = sleep30};
        heard_init(&h);
        h.pipe_fd = p[0];
        CHECK_EQ_INT(run(&spec, &h), -ECANCELED);
        CHECK_EQ_INT(h.dispatched, 1);
        CHECK_EQ_INT(h.exited, 0);
        heard_done(&h);
        close(p[0]);
        close(p[1]);
}

/* ---- attach ---- */

struct bg {
        struct heard h;
        struct agent_proc *p;
        int result;
};

static void *bg_run(void *arg)
{
        struct bg *b = arg;
        const struct agent_proc_listener l = listener(&b->h);
        b->result = agent_proc_run(b->p, &l);
        return NULL;
}

static int release(struct heard *h)
{
        return agent_proc_write_input(&(struct agent_selector){.tag = "att"}, false, "\n", 1, -1,
                                      1000);
}

static int list_one(void *ud, pid_t pid, const char *tag, const cJSON *config)
{
        int *found = ud;
        if (tag && strcmp(tag, "att") == 0 && config &&
            cJSON_IsTrue(cJSON_GetObjectItem(config, "mine")))
                *found = (int)pid;
        return 0;
}

static void test_attach(void)
{
        const char *argv[] = {"sh", "-c", "printf first; read x; printf second; exit 5", NULL};
        cJSON *config = cJSON_Parse("{\"mine\":true}");
        struct agent_proc_spec spec = {
            .argv = argv, .user = &root_user, .tag = "att", .config = config, .stdin_pipe = true};
        char err[AGENT_PROC_ERR_MAX];
        struct bg b;
        struct heard a;
        pthread_t t;
        int found = 0;

        CHECK_EQ_INT(agent_proc_attach(&(struct agent_selector){.tag = "att"}, NULL), -ESRCH);
        heard_init(&b.h);
        CHECK_EQ_INT(agent_proc_spawn(&spec, &b.p, err), 0);
        cJSON_Delete(config);
        pthread_create(&t, NULL, bg_run, &b);
        /* Wait (no time bound asserted) until the starter heard "first". */
        pthread_mutex_lock(&b.h.lock);
        while (b.h.out[AGENT_OUT_STDOUT].len < 5)
                pthread_cond_wait(&b.h.cond, &b.h.lock);
        pthread_mutex_unlock(&b.h.lock);

        CHECK_EQ_INT(agent_proc_foreach(list_one, &found), 0);
        CHECK_EQ_INT(found, agent_proc_pid(b.p));
        CHECK(agent_proc_count() >= 1);

        /* Attached while it runs: the retained "first" replayed, then "second" live. */
        heard_init(&a);
        a.on_started = release;
        a.exit_result = 9;
        CHECK_EQ_INT(agent_proc_attach(&(struct agent_selector){.tag = "att"},
                                       &(struct agent_proc_listener){.userdata = &a,
                                                                     .started = on_started,
                                                                     .output = on_output,
                                                                     .exited = on_exited}),
                     9);
        pthread_join(t, NULL);
        CHECK_STREQ(buf_str(&a.out[AGENT_OUT_STDOUT]), "firstsecond");
        CHECK_EQ_INT(a.pid, found);
        CHECK_EQ_INT(a.ex.exit_code, 5);
        CHECK_STREQ(buf_str(&b.h.out[AGENT_OUT_STDOUT]), "firstsecond");
        CHECK_EQ_INT(b.h.ex.exit_code, 5);
        heard_done(&a);

        /* Finished: still attachable (by pid too), everything replayed, then its exit. */
        heard_init(&a);
        CHECK_EQ_INT(agent_proc_attach(&(struct agent_selector){.pid = (uint32_t)found},
                                       &(struct agent_proc_listener){.userdata = &a,
                                                                     .started = on_started,
                                                                     .output = on_output,
                                                                     .exited = on_exited}),
                     0);
        CHECK_STREQ(buf_str(&a.log), "S1:first1:secondE");
        CHECK_STREQ(a.ex.status, "exit status 5");
        heard_done(&a);
        heard_done(&b.h);
        /* ... but no longer running: not found, not listed. */
        found = 0;
        CHECK_EQ_INT(agent_proc_foreach(list_one, &found), 0);
        CHECK_EQ_INT(found, 0);
        CHECK_EQ_INT(agent_proc_signal(&(struct agent_selector){.tag = "att"}, SIGKILL), -ESRCH);
}

int main(void)
{
        struct test_reaper reaper;

        if (geteuid() != 0) {
                fprintf(stderr, "test-agent-proc: skipped (needs root)\n");
                return 77;
        }
        CHECK_EQ_INT(agent_user_lookup("root", &root_user), 0);
        /* As in the agent (core/init.c): a write to a pipe nobody reads fails with EPIPE. */
        signal(SIGPIPE, SIG_IGN);
        test_reaper_start(&reaper);
        test_events();
        test_caps();
        test_signal_and_deadline();
        test_input();
        test_detach();
        test_attach();
        CHECK_EQ_INT(agent_proc_count(), 0);
        test_reaper_stop(&reaper);
        agent_user_done(&root_user);
        return unit_finish("test-agent-proc");
}
