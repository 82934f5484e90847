/* SPDX-License-Identifier: Apache-2.0 */
/* What egress.c (the rules) and egress-serve.c (sbx-egress's sockets and process) share. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "core/server.h"
#include "egress/egress-proc.h"
#include "egress/nft-rules.h"
#include "egress/policy/link-addr.h"
#include "egress/policy/net-policy.h"

struct nft_ctx;

struct egress {
        struct server *srv;
        /* held around changing a slot's policy and telling sbx-egress, and by the sync of a new
         * sbx-egress: what it is told comes in the order the policies changed. Taken before
         * lock, never by sbx-egress's own requests (pins, secrets). */
        pthread_mutex_t send_lock;
        pthread_mutex_t lock;   /* everything below */
        struct nft_names names; /* our tables (nft-rules.h) */
        struct nft_ctx *nft;    /* its socket owns the main table */
        bool table;             /* made by us and not deleted since */
        pthread_t watch;        /* egress_watch_*: puts removed tables back */
        pthread_cond_t watch_cond;
        bool watching, watch_stop;
        unsigned n;                                  /* slots with rules */
        struct net_policy *policy[EGRESS_SLOTS_MAX]; /* by slot, NULL: none */
        uid_t uid;                                   /* sbx-egress's user; 0: none yet */
        int uid_slot;                                /* the uid slot of that user */
        int dns_fd, proxy4_fd, proxy6_fd;            /* sbxd's: kept for every sbx-egress */
        unsigned dns_port, proxy_port;
        char *ca_cert; /* the sandboxes' CA (PEM), for their bundles */
        struct egress_proc *proc;
        unsigned builds; /* build proxies made, for their ids */
};

/* The watch: every EGRESS_WATCH_MS, our tables are checked and, when another program removed
 * them, put back (logged as an error, counted as sbx_egress_rules_restored_total). Started with
 * the tables, stopped by egress_free. */
#define EGRESS_WATCH_MS 1000
int egress_watch_start(struct egress *e);
void egress_watch_stop(struct egress *e);

/* The resolver's and the proxy's sockets bound and the CA loaded, once. Under e->lock. */
int egress_serve_sockets(struct egress *e, char *errmsg, size_t errlen);
/* sbx-egress started (and watched) if it is not yet. Under neither lock. */
int egress_serve_start(struct egress *e, char *errmsg, size_t errlen);
/* Everything of egress-serve.c gone: sbx-egress stopped, the sockets closed. */
void egress_serve_stop(struct egress *e);
