/* SPDX-License-Identifier: Apache-2.0 */
/* sbxd: the sandbox daemon. See server/README.md and sbxd(8). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "core/options.h"
#include "core/server-config.h"
#include "daemon.h"
#include "fd-util.h"
#include "log-journal.h"
#include "log.h"
#include "macros.h"
#include "pull/pull.h"
#include "reload.h"
#include "version.h"

/* --log-format and --log-level. */
static void setup_logging(const struct sbxd_config *c)
{
        log_set_max_level((enum log_level)c->log_level);
        if (c->log_format == LOG_FORMAT_JOURNAL ||
            (c->log_format == LOG_FORMAT_AUTO && log_journal_is_stream(2)))
                log_journal_start();
        else
                log_set_style(c->log_format == LOG_FORMAT_TEXT ? LOG_STYLE_TEXT : LOG_STYLE_JSON);
}

/* --check-config: what a start would read and check before touching anything. */
static int check_config(struct sbxd_config *c)
{
        char perr[PULL_ERR_MAX];
        if (config_load_tls(c) < 0)
                return 2;
        if (pull_setup(c, perr) < 0) { /* the registry options together */
                fprintf(stderr, "sbxd: %s\n", perr);
                return 2;
        }
        if (access(c->jailer, X_OK) < 0)
                fprintf(stderr, "sbxd: warning: jailer %s is not executable\n", c->jailer);
        if (access(c->agent, X_OK) < 0)
                fprintf(stderr, "sbxd: warning: agent %s is not executable\n", c->agent);
        if (access(c->runtime, R_OK | X_OK) < 0)
                fprintf(stderr, "sbxd: warning: runtime %s is missing\n", c->runtime);
        printf("%s: ok\n", c->config_file ? c->config_file : "the command line");
        return 0;
}

/* A command other than serving; its exit status. */
static int run_command(enum option_command cmd, struct sbxd_config *c,
                       const struct sbxd_option *get)
{
        char value[OPTION_MAX_LINE];
        switch (cmd) {
        case COMMAND_HELP:
                options_print_help(stdout);
                return 0;
        case COMMAND_VERSION:
                printf("sbxd %s\n", SBX_VERSION);
                return 0;
        case COMMAND_CHECK:
                return check_config(c);
        case COMMAND_PRINT:
                options_print_config(stdout, c);
                return 0;
        case COMMAND_GET:
                (void)config_derive_limits(c); /* the derived ones, when the state dir is there */
                printf("%s\n", option_format(get, c, value, sizeof(value)));
                return 0;
        case COMMAND_RUN:
        case COMMAND_CONFIG:
                break;
        }
        return 2;
}

/* Until SIGTERM or SIGINT: SIGHUP reloads, a change of the keys file reloads the keys. */
static void serve(struct daemon *d, int sig_fd)
{
        _cleanup_close_ int watch_fd = keys_watch_open(d->cfg.state_dir);
        if (watch_fd < 0)
                log_warning_errno(watch_fd,
                                  "watching %s for key changes: %m (SIGHUP reads the "
                                  "keys again)",
                                  d->cfg.state_dir);
        for (;;) {
                struct pollfd p[2] = {{.fd = sig_fd, .events = POLLIN},
                                      {.fd = watch_fd, .events = POLLIN}};
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        log_error_errno(errno, "poll: %m");
                        return;
                }
                if (p[1].revents & POLLIN && keys_watch_changed(watch_fd))
                        reload_keys(d);
                struct signalfd_siginfo si;
                if (!(p[0].revents & POLLIN) || read(sig_fd, &si, sizeof(si)) != sizeof(si))
                        continue;
                if (si.ssi_signo != SIGHUP) {
                        log_info("signal %u: stopping (sandboxes keep running)", si.ssi_signo);
                        return;
                }
                (void)sd_notify(0, "RELOADING=1");
                reload_config_and_keys(d);
                (void)sd_notify(0, "READY=1");
        }
}

int main(int argc, char **argv)
{
        struct daemon d = {};
        enum option_command cmd;
        const struct sbxd_option *get;
        sigset_t mask;

        log_setup("sbxd", 1);
        if (config_parse(argc, argv, &d.cfg, &cmd, &get) < 0)
                return 2;
        if (cmd != COMMAND_RUN) {
                int r = run_command(cmd, &d.cfg, get);
                config_done(&d.cfg);
                return r;
        }
        setup_logging(&d.cfg);
        if (config_load_tls(&d.cfg) < 0) {
                config_done(&d.cfg);
                return 2;
        }
        /* before any thread: libcurl's global start is not thread-safe */
        char perr[PULL_ERR_MAX];
        if (pull_setup(&d.cfg, perr) < 0) {
                fprintf(stderr, "sbxd: %s\n", perr);
                config_done(&d.cfg);
                return 2;
        }

        signal(SIGPIPE, SIG_IGN);
        sigemptyset(&mask);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigset_t blocked = mask;
        sigaddset(&blocked, SIGCHLD);               /* read by the monitor's signalfd */
        pthread_sigmask(SIG_BLOCK, &blocked, NULL); /* every thread inherits it */
        _cleanup_close_ int sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (sig_fd < 0) {
                log_error_errno(errno, "signalfd: %m");
                config_done(&d.cfg);
                return 1;
        }

        log_info("sbxd %s starting", SBX_VERSION);
        if (daemon_start(&d) < 0) {
                config_done(&d.cfg);
                return 1;
        }
        (void)sd_notifyf(0, "READY=1\nSTATUS=listening on port %u, %u sandbox(es) adopted", d.port,
                         d.adopted);
        serve(&d, sig_fd);
        (void)sd_notify(0, "STOPPING=1");
        daemon_stop(&d);
        config_done(&d.cfg);
        return 0;
}
