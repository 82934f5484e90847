/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A 101 Switching Protocols answer and the connection libmicrohttpd hands over once it is sent:
 * the exchange runs in a detached thread of its own (under TLS, MHD's connection thread carries
 * the bytes between the TLS session and the socket only once its callback returns, so the
 * exchange must not run in it), then the client's connection is closed and the owner's done()
 * frees what it holds. The agent's relay and terminal (channel/agent-upgrade.h) and cluster's
 * splice to the owner node (cluster/forward-upgrade.h) are its users.
 *
 * libmicrohttpd 0.9.75 frees an upgraded connection on its own thread as soon as the exchange's
 * thread has marked it closed, which that thread does inside MHD_upgrade_action() before it is
 * done with the connection (fixed in 0.9.76). So the daemon's MHD_OPTION_NOTIFY_CONNECTION
 * callback calls http_upgrade_closing() when a connection closes: it returns once no exchange
 * thread is still inside libmicrohttpd for it, or still has its socket. And before
 * MHD_stop_daemon(), http_upgrade_stop() ends the exchanges still running: the daemon frees the
 * handles of upgraded connections when it stops.
 */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#include "http/http.h"
#include "http/route.h"

/* http_upgrade_stop(): how long exchanges still running get to end once their sockets are shut
 * down (each looks at sbxd's stop flag at least every second, channel/agent-req.h). */
#define HTTP_UPGRADE_STOP_MS 3000

struct http_upgrade {
        /* Filled in by the owner before http_upgrade_response(). */
        void *userdata;
        void (*run)(struct http_upgrade *u);  /* the exchange, in the thread */
        void (*done)(struct http_upgrade *u); /* last, the connection closed (also when no
                                                 thread could start, or the 101 was queued
                                                 and never sent): frees userdata's state */
        size_t stack;                         /* the thread's stack */
        char name[ROUTE_ID_MAX];              /* for log lines: "req=<id>", a sandbox id */
        /* Set when libmicrohttpd hands the connection over (on the request's connection
         * thread, which never runs the request's handlers at the same time). */
        bool started;
        MHD_socket sock;   /* the client's socket (one end of a socketpair under TLS) */
        const char *extra; /* bytes the client sent past its head: valid until done() */
        size_t extra_len;
        struct MHD_UpgradeResponseHandle *urh;
        /* http/upgrade.c's own: the request that queued the 101 until it is handed over
         * (http_upgrade_queue()), then the connection, on its list of running exchanges */
        struct request *req;
        struct MHD_Connection *conn;
        struct http_upgrade *live_prev, *live_next;
        bool closing;   /* in MHD_upgrade_action(): http_upgrade_stop() waits for it */
        bool abandoned; /* http_upgrade_stop() gave up on it: MHD closes it on its own */
};

/* A 101 response (the caller adds its headers, then queues it with http_upgrade_queue()) running
 * u once sent. NULL when out of memory. */
struct MHD_Response *http_upgrade_response(struct http_upgrade *u);

/* Queue resp (http_upgrade_response(u)) for req: 101, or -EIO when MHD refuses it (u stays the
 * caller's, done() not called). Once queued, u->done(u) is called exactly once: after the
 * exchange, or when the request ends with the 101 never handed over (the client hung up before
 * it was written: libmicrohttpd 0.9.75 then never calls the upgrade back, and only ends the
 * request), from http_upgrade_request_end(). */
int http_upgrade_queue(struct request *req, struct http_upgrade *u, struct MHD_Response *resp);

/* From the daemon's MHD_OPTION_NOTIFY_COMPLETED callback, on the request's connection thread:
 * a 101 queued for req and never handed over is released (its done()). One handed over is the
 * exchange's: untouched (libmicrohttpd calls the upgrade back before it ends the request, on
 * the same thread). */
void http_upgrade_request_end(struct request *req);

/* Add a header of the 101 being relayed (name: value) to resp, unless a 101 must not pass it on:
 * Content-Length, Date, and hop-by-hop ones but Upgrade (MHD adds `Connection: Upgrade`).
 * 0, or -EPROTO when MHD refuses it. */
int http_upgrade_relay_header(struct MHD_Response *resp, const char *name, const char *value);

/* From the daemon's MHD_OPTION_NOTIFY_CONNECTION callback on MHD_CONNECTION_NOTIFY_CLOSED, which
 * libmicrohttpd calls just before it closes conn's socket and frees conn: waits until conn's
 * exchange thread, if it has one, has left MHD_upgrade_action() (microseconds: the connection is
 * closed only after that thread asked for it, or when the daemon stops, see below). */
void http_upgrade_closing(struct MHD_Connection *conn);

/* Before MHD_stop_daemon() (sbxd's stop flag set, channel/agent-req.h): shut down the sockets of
 * the exchanges still running and wait up to HTTP_UPGRADE_STOP_MS for them to end. One still
 * running then no longer calls libmicrohttpd (the daemon closes its connection itself); the
 * daemon's close of it waits in http_upgrade_closing() until it ends. */
void http_upgrade_stop(void);
