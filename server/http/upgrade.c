/* SPDX-License-Identifier: Apache-2.0 */
#include "http/upgrade.h"

#include <errno.h>
#include <pthread.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "http/http.h"
#include "log.h"
#include "thread-util.h"
#include "time-util.h"

/* The exchanges handed over and not yet finished (each may still call libmicrohttpd about its
 * connection and uses its socket): a list under `lock`; `gone` is signalled as one leaves it. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gone = PTHREAD_COND_INITIALIZER;
static struct http_upgrade *live;

static void live_add(struct http_upgrade *u)
{
        pthread_mutex_lock(&lock);
        u->live_prev = NULL;
        u->live_next = live;
        if (live)
                live->live_prev = u;
        live = u;
        pthread_mutex_unlock(&lock);
}

/* Under lock. */
static void live_del(struct http_upgrade *u)
{
        if (u->live_prev)
                u->live_prev->live_next = u->live_next;
        else
                live = u->live_next;
        if (u->live_next)
                u->live_next->live_prev = u->live_prev;
        u->live_prev = u->live_next = NULL;
}

/* The exchange is over: the connection closed in libmicrohttpd, then u leaves the list (the
 * daemon's free of the connection, waiting in http_upgrade_closing(), may go on), then its
 * owner frees it. 0.9.75's MHD_upgrade_action() marks the handle closed, then takes the
 * daemon's lock through the connection: the daemon's thread may free both in between, unless
 * it waits for us. */
static void finish(struct http_upgrade *u)
{
        pthread_mutex_lock(&lock);
        bool mark_closed = !u->abandoned;
        u->closing = mark_closed;
        pthread_mutex_unlock(&lock);
        if (mark_closed)
                MHD_upgrade_action(u->urh, MHD_UPGRADE_ACTION_CLOSE);
        pthread_mutex_lock(&lock);
        live_del(u);
        pthread_cond_broadcast(&gone);
        pthread_mutex_unlock(&lock);
        u->done(u);
}

static void *upgrade_thread(void *arg)
{
        struct http_upgrade *u = arg;
        u->run(u);
        finish(u);
        return NULL;
}

static void on_upgrade(void *cls, struct MHD_Connection *conn, void *req_cls, const char *extra,
                       size_t extra_len, MHD_socket sock, struct MHD_UpgradeResponseHandle *urh)
{
        struct http_upgrade *u = cls;
        if (u->req) { /* the exchange's from here, whatever happens */
                u->req->upgrade = NULL;
                u->req = NULL;
        }
        u->started = true;
        u->sock = sock;
        u->extra = extra;
        u->extra_len = extra_len;
        u->urh = urh;
        u->conn = conn;
        live_add(u);
        if (thread_start_detached(upgrade_thread, u, u->stack) < 0) {
                log_warning("%s: no thread for the upgraded connection", u->name);
                finish(u);
        }
}

struct MHD_Response *http_upgrade_response(struct http_upgrade *u)
{
        return MHD_create_response_for_upgrade(on_upgrade, u);
}

int http_upgrade_queue(struct request *req, struct http_upgrade *u, struct MHD_Response *resp)
{
        int r = http_queue(req, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
        if (r >= 0) {
                req->upgrade = u;
                u->req = req;
        }
        return r;
}

void http_upgrade_request_end(struct request *req)
{
        struct http_upgrade *u = req->upgrade;
        if (!u)
                return;
        req->upgrade = NULL;
        u->req = NULL;
        log_debug("%s: the client left before the 101 was sent: the upgrade is dropped", u->name);
        u->done(u);
}

int http_upgrade_relay_header(struct MHD_Response *resp, const char *name, const char *value)
{
        if ((http_hop_by_hop(name) && strcasecmp(name, "Upgrade") != 0) ||
            strcasecmp(name, "Content-Length") == 0 || strcasecmp(name, "Date") == 0)
                return 0;
        return MHD_add_response_header(resp, name, value) == MHD_YES ? 0 : -EPROTO;
}

/* Under lock. */
static bool is_live(const struct MHD_Connection *conn)
{
        for (const struct http_upgrade *u = live; u; u = u->live_next)
                if (u->conn == conn)
                        return true;
        return false;
}

void http_upgrade_closing(struct MHD_Connection *conn)
{
        pthread_mutex_lock(&lock);
        while (is_live(conn))
                pthread_cond_wait(&gone, &lock);
        pthread_mutex_unlock(&lock);
}

void http_upgrade_stop(void)
{
        pthread_mutex_lock(&lock);
        for (struct http_upgrade *u = live; u; u = u->live_next)
                (void)shutdown(u->sock, SHUT_RDWR); /* its reads end, its writes fail */
        int64_t end = now_ms() + HTTP_UPGRADE_STOP_MS;
        while (live && now_ms() < end) {
                pthread_mutex_unlock(&lock);
                struct timespec ts = {.tv_nsec = 20 * 1000000L};
                nanosleep(&ts, NULL);
                pthread_mutex_lock(&lock);
        }
        /* the rest no longer call libmicrohttpd, but for one already closing its connection:
         * that one is waited for (the daemon would free the handle under it) */
        unsigned left = 0;
        bool closing = false;
        for (struct http_upgrade *u = live; u; u = u->live_next) {
                closing |= u->closing;
                if (!u->closing) {
                        u->abandoned = true;
                        left++;
                }
        }
        while (closing) {
                pthread_cond_wait(&gone, &lock);
                closing = false;
                for (struct http_upgrade *u = live; u; u = u->live_next)
                        closing |= u->closing;
        }
        pthread_mutex_unlock(&lock);
        if (left > 0)
                log_warning("%u upgraded connection(s) still running after %d ms: the server "
                            "closes them as it stops",
                            left, HTTP_UPGRADE_STOP_MS);
}
