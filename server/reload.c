/* SPDX-License-Identifier: Apache-2.0 */
#include "reload.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "keys-file.h"
#include "lifecycle/host-limits.h"
#include "log.h"

/* How long the keys watch waits for the rest of one change's events. */
#define KEYS_WATCH_SETTLE_MS 20

struct reload_result {
        unsigned applied, pending;
        bool host_limits; /* --total-memory or --total-pids changed: the parent cgroup's */
        enum log_level log_level;
        bool log_level_changed;
};

static void on_changed(const struct sbxd_option *o, const char *before, const char *after,
                       bool applied, void *userdata)
{
        struct reload_result *res = userdata;
        const char *from = *before ? before : "(default)", *to = *after ? after : "(default)";
        if (!applied) {
                res->pending++;
                log_warning("reload: %s changed from %s to %s, which takes a restart (systemctl "
                            "restart sbxd; sandboxes keep running)",
                            o->name, from, to);
                return;
        }
        res->applied++;
        log_info("reload: %s changed from %s to %s", o->name, from, to);
        if (strcmp(o->name, "total-memory") == 0 || strcmp(o->name, "total-pids") == 0)
                res->host_limits = true;
        if (strcmp(o->name, "log-level") == 0)
                res->log_level_changed = true;
}

void reload_keys(struct daemon *d)
{
        int r = keys_reload(d->cfg.state_dir, &d->srv.keys);
        if (r < 0)
                log_error_errno(r,
                                "reload: reading %s/" SBX_KEYS_FILE ": %m (the keys in force "
                                "stay)",
                                d->cfg.state_dir);
        else
                log_info("API keys: %d in force", r);
}

void reload_config_and_keys(struct daemon *d)
{
        struct reload_result res = {};
        if (!d->cfg.config_file)
                log_info("reload: no --config file: the API keys alone are read again");
        else if (config_reload(&d->cfg, on_changed, &res) < 0)
                log_error("reload: %s has a mistake (logged above): nothing changed",
                          d->cfg.config_file);
        else
                log_info("reload: %s read: %u change(s) applied, %u waiting for a restart",
                         d->cfg.config_file, res.applied, res.pending);
        if (res.log_level_changed)
                log_set_max_level((enum log_level)d->cfg.log_level);
        if (res.host_limits)
                (void)host_limits_apply(&d->cfg);
        reload_keys(d);
}

int keys_watch_open(const char *state_dir)
{
        int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (inotify_add_watch(fd, state_dir, IN_MOVED_TO | IN_CLOSE_WRITE) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* Read what fd has: whether an event named the keys file. */
static bool drain_events(int fd)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        bool changed = false;
        ssize_t n;
        while ((n = read(fd, buf, sizeof(buf))) > 0) {
                for (char *p = buf; p < buf + n;) {
                        const struct inotify_event *ev = (const struct inotify_event *)p;
                        if (ev->len && strcmp(ev->name, SBX_KEYS_FILE) == 0)
                                changed = true;
                        p += sizeof(*ev) + ev->len;
                }
        }
        return changed;
}

bool keys_watch_changed(int fd)
{
        if (!drain_events(fd))
                return false;
        /* One change is often several events (the rename, then the writer's close of the
         * renamed file): read them all, and the keys once. */
        struct pollfd p = {.fd = fd, .events = POLLIN};
        while (poll(&p, 1, KEYS_WATCH_SETTLE_MS) > 0)
                (void)drain_events(fd);
        return true;
}
