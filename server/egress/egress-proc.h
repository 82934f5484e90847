/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sbxd's side of sbx-egress (egress/README.md): starting it as its own user, telling it what it
 * must know (api/egress-ctl.md), answering what it asks, and starting it again when it dies.
 *
 * sbxd keeps the sockets sandboxes' egress arrives on (the resolver's, the proxy's, each build
 * proxy's) and hands them over at every start, so their ports never change and nothing a
 * sandbox sends is lost or let through while no sbx-egress runs: it waits in the sockets'
 * queues (fail closed). A new process gets hello, every policy (the sync hook), every running
 * build, then serve; only then does it answer sandboxes.
 *
 * An sbx-egress that exits, breaks the contract or does not answer within EGRESS_CHAN_CALL_MS
 * is killed and started again, EGRESS_PROC_RESTART_MIN_MS later the first time, twice as late
 * each time after (at most EGRESS_PROC_RESTART_MAX_MS) until one has run EGRESS_PROC_STABLE_MS.
 * Each restart is logged as an error and counted (sbx_egress_restarts_total).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "egress/policy/net-policy.h"

#define EGRESS_PROC_RESTART_MIN_MS 50
#define EGRESS_PROC_RESTART_MAX_MS 5000
#define EGRESS_PROC_STABLE_MS      10000
#define EGRESS_PROC_STOP_MS        3000 /* to exit after the channel closes, then SIGKILL */

struct egress_proc;

struct egress_proc_config {
        char *binary;   /* sbx-egress */
        uid_t uid;      /* its user and group */
        char *upstream; /* the resolver's upstream server, an IP address */
        char *ca_key;   /* the sandboxes' CA (PEM; the key wiped when freed) */
        char *ca_cert;
        char *upstream_ca;        /* --egress-upstream-ca's contents, or NULL */
        int dns_fd;               /* the resolver's UDP socket */
        int proxy4_fd, proxy6_fd; /* the proxy's listening sockets */
};

/* What sbx-egress asks, and what a new one must be told. Called from the supervisor's threads:
 * none of them may wait for sbx-egress itself. */
struct egress_proc_hooks {
        /* pin: addresses answered for a name slot's policy allows, into its pinned set */
        int (*pin)(void *arg, int slot, int family, const void *addrs, size_t n, unsigned ttl_s);
        /* secret: the value of a secret slot's own rules name (*ret to free), -EPERM otherwise */
        int (*secret)(void *arg, int slot, const char *name, char **ret);
        /* sync: every slot's policy, through egress_proc_policy(), to a new sbx-egress */
        int (*sync)(void *arg, struct egress_proc *p);
        void *arg;
};

/* Takes over cfg's strings and descriptors (also on failure), starts the first sbx-egress and
 * the thread that watches it. */
int egress_proc_start(struct egress_proc_config *cfg, const struct egress_proc_hooks *hooks,
                      struct egress_proc **ret);
/* Frees a config that egress_proc_start() did not take. */
void egress_proc_config_done(struct egress_proc_config *c);
/* Closes the channel, waits for sbx-egress to exit (killing it after EGRESS_PROC_STOP_MS) and
 * for the watching thread; NULL is fine. */
void egress_proc_stop(struct egress_proc *p);

/* Tells the running sbx-egress slot's policy (NULL: it has none) and waits for its answer. 0
 * also when none runs (the next gets every policy through the sync hook); -errno when one runs
 * and refused it. Callers keep what they send and what the sync hook reads in one order
 * (server/egress/egress.c: one lock around changing a policy and sending it). */
int egress_proc_policy(struct egress_proc *p, int slot, const struct net_policy *pol);

/* A build's proxy (egress/serve/build-proxy.h) on lfd (a listening unix socket, kept by sbxd
 * until egress_proc_build_end and handed to every new sbx-egress), for hosts; note gets its
 * refusals (from the watching thread). -EBUSY past EGRESS_BUILDS_MAX builds. */
typedef void (*egress_proc_note_fn)(void *userdata, const char *message);
int egress_proc_build(struct egress_proc *p, const char *id, int lfd, char *const *hosts,
                      size_t n_hosts, egress_proc_note_fn note, void *userdata);
/* The build is over: its proxy stops, no note comes after this returns. */
void egress_proc_build_end(struct egress_proc *p, const char *id);

/* The running sbx-egress's pid (0: none), for tests and logs. */
pid_t egress_proc_pid(struct egress_proc *p);
