/* SPDX-License-Identifier: Apache-2.0 */
#include "egress/egress-proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/stats.h"
#include "egress-chan.h"
#include "fd-util.h"
#include "log.h"
#include "macros.h"
#include "missing-syscalls.h"
#include "time-util.h"

#ifndef P_PIDFD
#define P_PIDFD 3 /* linux/wait.h; glibc 2.36's idtype_t lacks it */
#endif

struct build {
        char *id;
        int lfd;
        char **hosts;
        size_t n_hosts;
        egress_proc_note_fn note;
        void *userdata;
        struct build *next;
};

struct egress_proc {
        struct egress_proc_config cfg;
        struct egress_proc_hooks h;
        pthread_t thread;     /* the supervisor */
        pthread_mutex_t lock; /* everything below but the builds */
        pthread_cond_t wake;  /* stopping */
        bool stopping;
        struct egress_chan *chan; /* the live channel (NULL: none), with its process */
        pid_t pid;
        int pidfd;
        unsigned users;                  /* threads inside a call on chan: it is freed after */
        pthread_mutex_t build_send_lock; /* one build change or resend at a time */
        pthread_mutex_t builds_lock;     /* the list; never held across a call */
        struct build *builds;
};

/* ---- the live channel ---- */

/* The live channel, held until chan_put (so that it outlives the call); NULL when none. */
static struct egress_chan *chan_get(struct egress_proc *p)
{
        pthread_mutex_lock(&p->lock);
        struct egress_chan *c = p->chan;
        if (c)
                p->users++;
        pthread_mutex_unlock(&p->lock);
        return c;
}

static void chan_put(struct egress_proc *p)
{
        pthread_mutex_lock(&p->lock);
        if (--p->users == 0)
                pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
}

/* An sbx-egress that does not answer is a broken one: killed, and so started again. */
static void kill_hung(struct egress_proc *p, const char *what)
{
        pthread_mutex_lock(&p->lock);
        if (p->pidfd >= 0) {
                log_error("egress: sbx-egress (pid %d) did not answer %s within %d ms: killed",
                          (int)p->pid, what, EGRESS_CHAN_CALL_MS);
                (void)pidfd_send_signal(p->pidfd, SIGKILL, NULL, 0);
        }
        pthread_mutex_unlock(&p->lock);
}

/* A request to the running sbx-egress and its answer's error; -EPIPE when none runs or it
 * went meanwhile, -ETIMEDOUT (and killed) when it did not answer. */
static int call(struct egress_proc *p, struct egress_msg *m)
{
        struct egress_chan *c = chan_get(p);
        if (!c)
                return -EPIPE;
        struct egress_msg a;
        int r = egress_chan_call(c, m, &a);
        chan_put(p);
        if (r == -ETIMEDOUT)
                kill_hung(p, "a request");
        if (r >= 0) {
                r = a.error;
                egress_msg_done(&a);
        }
        return r;
}

/* The same for a change: when no sbx-egress runs, or it went, the next one is told anyway. */
static int tell(struct egress_proc *p, struct egress_msg *m)
{
        int r = call(p, m);
        return r == -EPIPE || r == -ETIMEDOUT ? 0 : r;
}

int egress_proc_policy(struct egress_proc *p, int slot, const struct net_policy *pol)
{
        struct egress_msg m = {.type = pol ? EGRESS_MSG_POLICY : EGRESS_MSG_FORGET, .slot = slot};
        if (pol && !(m.policy = net_policy_record_json(pol)))
                return -ENOMEM;
        int r = tell(p, &m);
        cJSON_Delete(m.policy);
        return r;
}

/* ---- builds ---- */

static void build_free(struct build *b)
{
        if (!b)
                return;
        free(b->id);
        safe_close(b->lfd);
        for (size_t i = 0; i < b->n_hosts; i++)
                free(b->hosts[i]);
        free(b->hosts);
        free(b);
}

static int send_build(struct egress_proc *p, const struct build *b)
{
        struct egress_msg m = {.type = EGRESS_MSG_BUILD,
                               .name = b->id,
                               .hosts = b->hosts,
                               .n_hosts = b->n_hosts,
                               .fds = {b->lfd},
                               .n_fds = 1};
        return call(p, &m);
}

static int tell_build(struct egress_proc *p, const struct build *b)
{
        int r = send_build(p, b);
        return r == -EPIPE || r == -ETIMEDOUT ? 0 : r;
}

int egress_proc_build(struct egress_proc *p, const char *id, int lfd, char *const *hosts,
                      size_t n_hosts, egress_proc_note_fn note, void *userdata)
{
        struct build *b = calloc(1, sizeof(*b));
        if (!b) {
                safe_close(lfd);
                return -ENOMEM;
        }
        b->lfd = lfd;
        b->note = note;
        b->userdata = userdata;
        b->id = strdup(id);
        b->hosts = calloc(n_hosts + 1, sizeof(char *));
        for (size_t i = 0; b->hosts && i < n_hosts; i++)
                if ((b->hosts[i] = strdup(hosts[i])))
                        b->n_hosts++;
        if (!b->id || !b->hosts || b->n_hosts < n_hosts) {
                build_free(b);
                return -ENOMEM;
        }
        pthread_mutex_lock(&p->build_send_lock);
        pthread_mutex_lock(&p->builds_lock);
        b->next = p->builds;
        p->builds = b;
        pthread_mutex_unlock(&p->builds_lock);
        int r = tell_build(p, b);
        pthread_mutex_unlock(&p->build_send_lock);
        if (r < 0) {
                log_warning_errno(r, "egress: sbx-egress refused the proxy of build %s: %m", id);
                egress_proc_build_end(p, id);
        }
        return r;
}

void egress_proc_build_end(struct egress_proc *p, const char *id)
{
        pthread_mutex_lock(&p->build_send_lock);
        pthread_mutex_lock(&p->builds_lock);
        struct build *b = NULL;
        for (struct build **at = &p->builds; *at; at = &(*at)->next)
                if (strcmp((*at)->id, id) == 0) {
                        b = *at;
                        *at = b->next;
                        break;
                }
        pthread_mutex_unlock(&p->builds_lock);
        if (b) {
                struct egress_msg m = {.type = EGRESS_MSG_BUILD_END, .name = b->id};
                (void)tell(p, &m);
        }
        pthread_mutex_unlock(&p->build_send_lock);
        build_free(b);
}

/* Every running build's proxy to a new sbx-egress. */
static int resend_builds(struct egress_proc *p)
{
        pthread_mutex_lock(&p->build_send_lock);
        int r = 0;
        /* the list only changes under build_send_lock, which we hold: walking it is safe */
        for (struct build *b = p->builds; b && r >= 0; b = b->next)
                r = send_build(p, b);
        pthread_mutex_unlock(&p->build_send_lock);
        return r;
}

/* ---- what sbx-egress asks ---- */

static int on_note(struct egress_proc *p, const struct egress_msg *m)
{
        pthread_mutex_lock(&p->builds_lock);
        struct build *b = p->builds;
        while (b && strcmp(b->id, m->name) != 0)
                b = b->next;
        if (b) /* under the lock: no note after egress_proc_build_end */
                b->note(b->userdata, m->text);
        pthread_mutex_unlock(&p->builds_lock);
        return 0;
}

static int on_message(void *arg, struct egress_msg *m, char **value)
{
        struct egress_proc *p = arg;
        switch (m->type) {
        case EGRESS_MSG_PIN:
                return p->h.pin(p->h.arg, m->slot, m->family, m->addrs, m->n_addrs, m->ttl);
        case EGRESS_MSG_SECRET:
                return p->h.secret(p->h.arg, m->slot, m->name, value);
        case EGRESS_MSG_NOTE:
                return on_note(p, m);
        default: /* sbx-egress's to answer, not ours */
                return -EPROTO;
        }
}

/* ---- one sbx-egress ---- */

static int spawn(struct egress_proc *p, int *ret_sock, pid_t *ret_pid)
{
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        _cleanup_close_ int ours = sv[0];
        /* above the descriptors posix_spawn dup2s onto, so that it never meets src == dst */
        _cleanup_close_ int theirs = fcntl(sv[1], F_DUPFD_CLOEXEC, 10);
        safe_close(sv[1]);
        if (theirs < 0)
                return -errno;
        /* a policy with every rule is larger than the default buffer */
        int size = (int)EGRESS_CTL_MSG_MAX * 2;
        (void)setsockopt(ours, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
        char uid[16];
        snprintf(uid, sizeof(uid), "%u", (unsigned)p->cfg.uid);
        char *const argv[] = {(char *)"sbx-egress",
                              (char *)"--control-fd",
                              (char *)"3",
                              (char *)"--uid",
                              uid,
                              (char *)"--gid",
                              uid,
                              NULL};
        const char *lvl = getenv("SBX_LOG_LEVEL");
        char lvlenv[64];
        snprintf(lvlenv, sizeof(lvlenv), "SBX_LOG_LEVEL=%s", lvl ? lvl : "info");
        char *const envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin", lvlenv, NULL};
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t at;
        sigset_t none, def;
        sigemptyset(&none);
        sigfillset(&def);
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&at);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, theirs, 3); /* stderr stays sbxd's: its log */
        posix_spawn_file_actions_addclosefrom_np(&fa, 4);
        posix_spawnattr_setsigmask(&at, &none);
        posix_spawnattr_setsigdefault(&at, &def);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        int r = -posix_spawn(ret_pid, p->cfg.binary, &fa, &at, argv, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&at);
        if (r < 0)
                return r;
        *ret_sock = TAKE_FD(ours);
        return 0;
}

static void *reader_main(void *arg)
{
        struct egress_proc *p = arg;
        const char *why = "";
        int r = egress_chan_run(p->chan, on_message, p, &why);
        if (r < 0) { /* it broke the contract: it is not trusted to go on */
                log_error_errno(r, "egress: sbx-egress (pid %d): %m %s: killed", (int)p->pid, why);
                (void)pidfd_send_signal(p->pidfd, SIGKILL, NULL, 0);
        }
        return NULL;
}

/* hello, every policy, every build, serve. */
static int introduce(struct egress_proc *p)
{
        struct egress_msg hello = {.type = EGRESS_MSG_HELLO,
                                   .upstream = p->cfg.upstream,
                                   .ca_key = p->cfg.ca_key,
                                   .ca_cert = p->cfg.ca_cert,
                                   .upstream_ca = p->cfg.upstream_ca,
                                   .fds = {p->cfg.dns_fd, p->cfg.proxy4_fd, p->cfg.proxy6_fd},
                                   .n_fds = 3};
        int r = call(p, &hello);
        if (r >= 0)
                r = p->h.sync(p->h.arg, p);
        if (r >= 0)
                r = resend_builds(p);
        struct egress_msg serve = {.type = EGRESS_MSG_SERVE};
        if (r >= 0)
                r = call(p, &serve);
        return r;
}

/* Waits for the process to exit (at most ms, then SIGKILL) and says how it ended. */
static void reap(struct egress_proc *p, int ms, char *how, size_t len)
{
        struct pollfd pf = {.fd = p->pidfd, .events = POLLIN};
        if (poll(&pf, 1, ms) <= 0) {
                (void)pidfd_send_signal(p->pidfd, SIGKILL, NULL, 0);
                (void)poll(&pf, 1, 1000);
        }
        siginfo_t si = {};
        int r;
        while ((r = waitid((idtype_t)P_PIDFD, (id_t)p->pidfd, &si, WEXITED)) < 0 && errno == EINTR)
                ;
        if (r < 0) /* the monitor reaps every child of sbxd: it may have been first */
                snprintf(how, len, "exited");
        else if (si.si_code == CLD_EXITED)
                snprintf(how, len, "exited with status %d", si.si_status);
        else
                snprintf(how, len, "was killed by signal %d", si.si_status);
}

/* One sbx-egress from start to end: 0 when it ended because sbxd stops. */
static int run_one(struct egress_proc *p)
{
        int sock = -EBADF;
        pid_t pid;
        int r = spawn(p, &sock, &pid);
        if (r < 0)
                return log_error_errno(r, "egress: starting %s: %m", p->cfg.binary);
        int pidfd = pidfd_open(pid, 0);
        struct egress_chan *c = NULL;
        if (pidfd < 0 || egress_chan_new(sock, &c) < 0) {
                if (pidfd >= 0)
                        (void)pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
                else
                        (void)kill(pid, SIGKILL);
                safe_close(pidfd);
                egress_chan_free(c);
                return log_error_errno(-EIO, "egress: watching sbx-egress (pid %d) failed", pid);
        }
        pthread_t reader;
        pthread_mutex_lock(&p->lock);
        p->pid = pid;
        p->pidfd = pidfd;
        p->chan = c;
        if (p->stopping) /* egress_proc_stop came before the channel was here */
                egress_chan_shutdown(c);
        pthread_mutex_unlock(&p->lock);
        r = -pthread_create(&reader, NULL, reader_main, p);
        bool reading = r >= 0;
        if (r >= 0 && (r = introduce(p)) < 0)
                log_error_errno(r, "egress: telling sbx-egress (pid %d) what it serves: %m",
                                (int)pid);
        if (r < 0)
                (void)pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
        else
                log_info("egress: sbx-egress (pid %d) serves sandboxes", (int)pid);
        if (reading) /* until the channel ends: the process's exit, or our stop */
                pthread_join(reader, NULL);
        pthread_mutex_lock(&p->lock);
        p->chan = NULL;
        while (p->users > 0)
                pthread_cond_wait(&p->wake, &p->lock);
        bool stopping = p->stopping;
        pthread_mutex_unlock(&p->lock);
        char how[64];
        reap(p, stopping ? EGRESS_PROC_STOP_MS : 0, how, sizeof(how));
        pthread_mutex_lock(&p->lock);
        p->pid = 0;
        p->pidfd = safe_close(p->pidfd);
        pthread_mutex_unlock(&p->lock);
        egress_chan_free(c);
        if (stopping)
                return 0;
        log_error("egress: sbx-egress (pid %d) %s; sandboxes' DNS and proxied connections wait "
                  "until the next one serves",
                  (int)pid, how);
        return -ECHILD;
}

static void *supervise(void *arg)
{
        struct egress_proc *p = arg;
        int delay = 0;
        for (;;) {
                int64_t started = now_ms();
                if (run_one(p) == 0)
                        break;
                stats_count_egress_restart();
                delay = now_ms() - started >= EGRESS_PROC_STABLE_MS
                            ? EGRESS_PROC_RESTART_MIN_MS
                            : MIN(MAX(delay * 2, EGRESS_PROC_RESTART_MIN_MS),
                                  EGRESS_PROC_RESTART_MAX_MS);
                struct timespec until = timespec_in_ms(CLOCK_MONOTONIC, delay);
                pthread_mutex_lock(&p->lock);
                while (!p->stopping &&
                       pthread_cond_timedwait(&p->wake, &p->lock, &until) != ETIMEDOUT)
                        ;
                bool stop = p->stopping;
                pthread_mutex_unlock(&p->lock);
                if (stop)
                        break;
        }
        return NULL;
}

void egress_proc_config_done(struct egress_proc_config *c)
{
        free(c->binary);
        free(c->upstream);
        if (c->ca_key)
                explicit_bzero(c->ca_key, strlen(c->ca_key));
        free(c->ca_key);
        free(c->ca_cert);
        free(c->upstream_ca);
        safe_close(c->dns_fd);
        safe_close(c->proxy4_fd);
        safe_close(c->proxy6_fd);
        *c =
            (struct egress_proc_config){.dns_fd = -EBADF, .proxy4_fd = -EBADF, .proxy6_fd = -EBADF};
}

int egress_proc_start(struct egress_proc_config *cfg, const struct egress_proc_hooks *hooks,
                      struct egress_proc **ret)
{
        struct egress_proc *p = calloc(1, sizeof(*p));
        if (!p) {
                egress_proc_config_done(cfg);
                return -ENOMEM;
        }
        p->cfg = *cfg;
        *cfg =
            (struct egress_proc_config){.dns_fd = -EBADF, .proxy4_fd = -EBADF, .proxy6_fd = -EBADF};
        p->h = *hooks;
        p->pidfd = -EBADF;
        pthread_mutex_init(&p->lock, NULL);
        pthread_mutex_init(&p->build_send_lock, NULL);
        pthread_mutex_init(&p->builds_lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->wake, &ca);
        pthread_condattr_destroy(&ca);
        int r = -pthread_create(&p->thread, NULL, supervise, p);
        if (r < 0) {
                egress_proc_config_done(&p->cfg);
                free(p);
                return r;
        }
        *ret = p;
        return 0;
}

void egress_proc_stop(struct egress_proc *p)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        if (p->chan) /* sbx-egress reads the end of its channel and exits */
                egress_chan_shutdown(p->chan);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
        while (p->builds) {
                struct build *b = p->builds;
                p->builds = b->next;
                build_free(b);
        }
        egress_proc_config_done(&p->cfg);
        pthread_mutex_destroy(&p->lock);
        pthread_mutex_destroy(&p->build_send_lock);
        pthread_mutex_destroy(&p->builds_lock);
        pthread_cond_destroy(&p->wake);
        free(p);
}

pid_t egress_proc_pid(struct egress_proc *p)
{
        pthread_mutex_lock(&p->lock);
        pid_t pid = p->pid;
        pthread_mutex_unlock(&p->lock);
        return pid;
}
