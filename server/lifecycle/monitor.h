/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Noticing sandboxes whose agent died on its own (crash, OOM kill, kill from inside the host):
 * one thread waits on every agent pidfd (epoll, one-shot) and tears such a sandbox down as if
 * it had been killed, so it stops being listed and its cgroups and dir go away.
 *
 * sbxd is a child subreaper (main.c): agents are re-parented to it when their jailer exits, and
 * this thread reaps every exited child on SIGCHLD (signalfd), so a killed sandbox leaves no
 * zombie behind. Code waiting for a particular child uses its pidfd, never its pid.
 */
#pragma once

#include "core/server.h"
#include "lifecycle/sandbox.h"

int monitor_start(struct server *srv);
/* Watch s (must be registered; uses s->pidfd and s->serial). No-op without a pidfd. */
int monitor_watch(struct server *srv, const struct sandbox *s);
/* Stop watching s (its processes are about to be killed on purpose: persist to disk). */
void monitor_unwatch(struct server *srv, const struct sandbox *s);
void monitor_stop(struct server *srv);
/* Add s to the registry and watch its agent (a warning when it cannot be watched). */
int monitor_register(struct server *srv, struct sandbox *s);
