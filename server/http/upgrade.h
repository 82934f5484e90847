/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A 101 Switching Protocols answer and the connection libmicrohttpd hands over once it is sent:
 * the exchange runs in a detached thread of its own (under TLS, MHD's connection thread carries
 * the bytes between the TLS session and the socket only once its callback returns, so the
 * exchange must not run in it), then the client's connection is closed and the owner's done()
 * frees what it holds. The agent's relay and terminal (channel/agent-upgrade.h) and cluster's
 * splice to the owner node (cluster/forward-upgrade.h) are its users.
 */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "http/route.h"

struct http_upgrade {
        /* Filled in by the owner before http_upgrade_response(). */
        void *userdata;
        void (*run)(struct http_upgrade *u);  /* the exchange, in the thread */
        void (*done)(struct http_upgrade *u); /* last, the connection closed (also when no
                                                 thread could start): frees userdata's state */
        size_t stack;                         /* the thread's stack */
        char name[ROUTE_ID_MAX];              /* for log lines: "req=<id>", a sandbox id */
        /* Set when libmicrohttpd hands the connection over (on the request's connection
         * thread, which never runs the request's handlers at the same time). */
        bool started;
        MHD_socket sock;   /* the client's socket (one end of a socketpair under TLS) */
        const char *extra; /* bytes the client sent past its head: valid until done() */
        size_t extra_len;
        struct MHD_UpgradeResponseHandle *urh;
};

/* A 101 response (the caller adds its headers and queues it) running u once sent. NULL when out
 * of memory. When the 101 never goes out MHD never calls back: u stays the caller's (started
 * stays false). */
struct MHD_Response *http_upgrade_response(struct http_upgrade *u);

/* Add a header of the 101 being relayed (name: value) to resp, unless a 101 must not pass it on:
 * Content-Length, Date, and hop-by-hop ones but Upgrade (MHD adds `Connection: Upgrade`).
 * 0, or -EPROTO when MHD refuses it. */
int http_upgrade_relay_header(struct MHD_Response *resp, const char *name, const char *value);
