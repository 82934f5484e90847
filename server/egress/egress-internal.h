/* SPDX-License-Identifier: Apache-2.0 */
/* What egress.c (the rules) and egress-serve.c (sbx-egress's sockets and process) share. */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#include "core/server.h"
#include "egress/egress-proc.h"
#include "egress/policy/link-addr.h"
#include "egress/policy/net-policy.h"

struct nft_ctx;

struct egress {
        struct server *srv;
        /* held around changing a slot's policy and telling sbx-egress, and by the sync of a new
         * sbx-egress: what it is told comes in the order the policies changed. Taken before
         * lock, never by sbx-egress's own requests (pins, secrets). */
        pthread_mutex_t send_lock;
        pthread_mutex_t lock; /* everything below */
        struct nft_ctx *nft;
        bool table;                                  /* made by us and not deleted since */
        unsigned n;                                  /* slots with rules */
        struct net_policy *policy[EGRESS_SLOTS_MAX]; /* by slot, NULL: none */
        uid_t uid;                                   /* sbx-egress's user; 0: none yet */
        int dns_fd, proxy4_fd, proxy6_fd;            /* sbxd's: kept for every sbx-egress */
        unsigned dns_port, proxy_port;
        char *ca_cert; /* the sandboxes' CA (PEM), for their bundles */
        struct egress_proc *proc;
        unsigned builds; /* build proxies made, for their ids */
};

/* The resolver's and the proxy's sockets bound and the CA loaded, once. Under e->lock. */
int egress_serve_sockets(struct egress *e, char *errmsg, size_t errlen);
/* sbx-egress started (and watched) if it is not yet. Under neither lock. */
int egress_serve_start(struct egress *e, char *errmsg, size_t errlen);
/* Everything of egress-serve.c gone: sbx-egress stopped, the sockets closed. */
void egress_serve_stop(struct egress *e);
