/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/upgrade.h against the real libmicrohttpd, run as sbxd runs it (a thread per connection,
 * upgrades allowed), with its connection-closed callback calling http_upgrade_closing() as
 * front/front.c's does.
 *
 * libmicrohttpd 0.9.75's MHD_upgrade_action(CLOSE) marks the handle closed, then takes the
 * daemon's lock through the connection; the daemon's thread frees the connection (and the
 * handle) as soon as it sees the mark. To make that window certain instead of rare, this
 * binary wraps MHD_upgrade_action() (the call from http/upgrade.c binds to the wrapper) and
 * pthread_mutex_lock(): the first lock taken inside the action waits LOCK_DELAY_MS first. A
 * second upgrade opened meanwhile makes the daemon's thread look at its upgraded connections.
 * The checks: the daemon never closes (then frees) a connection while a thread is still inside
 * MHD_upgrade_action() for it, and no thread calls it for a connection already closed
 * (http_upgrade_stop() before MHD_stop_daemon(), one exchange ending late included).
 *
 * And a 101 queued with http_upgrade_queue() for a client that already reset its connection
 * (its handler holds the answer until the reset is in): libmicrohttpd never calls the upgrade
 * back; the request's end (MHD_OPTION_NOTIFY_COMPLETED calling http_upgrade_request_end(), as
 * front/front.c's does) releases it, exactly once, and its exchange never runs.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http/upgrade.h"
#include "time-util.h"
#include "unit.h"

#define LOCK_DELAY_MS 300
#define MAX_CONNS     16
#define WAIT_MS       5000

static void sleep_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
}

/* ---- what the test watches (under mu) ---- */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
struct handle {
        struct MHD_UpgradeResponseHandle *urh;
        struct MHD_Connection *conn;
};
static struct handle handles[MAX_CONNS];
static size_t n_handles;
static struct MHD_Connection *in_action[MAX_CONNS]; /* threads inside MHD_upgrade_action() */
static struct MHD_Connection *closed[MAX_CONNS];    /* closed (freed) by the daemon */
static size_t n_closed;
static int freed_while_in_action, action_after_close;
static size_t exchanges_done;
static bool delay_locks;

static int (*real_lock)(pthread_mutex_t *);
static enum MHD_Result (*real_action)(struct MHD_UpgradeResponseHandle *, enum MHD_UpgradeAction,
                                      ...);
static __thread bool delay_next_lock;

int pthread_mutex_lock(pthread_mutex_t *m)
{
        if (!real_lock) /* called before main() too */
                real_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
        if (delay_next_lock) {
                delay_next_lock = false;
                sleep_ms(LOCK_DELAY_MS);
        }
        return real_lock(m);
}

static struct MHD_Connection *conn_of(const struct MHD_UpgradeResponseHandle *urh)
{
        for (size_t i = 0; i < n_handles; i++)
                if (handles[i].urh == urh)
                        return handles[i].conn;
        return NULL;
}

static bool was_closed(const struct MHD_Connection *conn)
{
        for (size_t i = 0; i < n_closed; i++)
                if (closed[i] == conn)
                        return true;
        return false;
}

static void set_in_action(struct MHD_Connection *from, struct MHD_Connection *to)
{
        for (size_t i = 0; i < MAX_CONNS; i++)
                if (in_action[i] == from) {
                        in_action[i] = to;
                        return;
                }
}

enum MHD_Result MHD_upgrade_action(struct MHD_UpgradeResponseHandle *urh,
                                   enum MHD_UpgradeAction action, ...)
{
        real_lock(&mu);
        struct MHD_Connection *conn = conn_of(urh);
        bool gone = was_closed(conn);
        if (gone)
                action_after_close++;
        else
                set_in_action(NULL, conn);
        bool delay = delay_locks;
        pthread_mutex_unlock(&mu);
        if (gone) /* the handle is freed: calling libmicrohttpd would crash this test */
                return MHD_NO;
        delay_next_lock = delay;
        enum MHD_Result r = real_action(urh, action);
        delay_next_lock = false;
        real_lock(&mu);
        set_in_action(conn, NULL);
        pthread_mutex_unlock(&mu);
        return r;
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
        if (toe != MHD_CONNECTION_NOTIFY_CLOSED)
                return;
        http_upgrade_closing(conn);
        real_lock(&mu);
        for (size_t i = 0; i < MAX_CONNS; i++)
                if (in_action[i] == conn)
                        freed_while_in_action++;
        if (n_closed < MAX_CONNS)
                closed[n_closed++] = conn;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&mu);
}

/* ---- the exchanges: read until the client closes, or (held) until released ---- */

struct exchange {
        struct http_upgrade up;
        struct MHD_Connection *conn;
        bool held;
};

static bool release_held;

static void exchange_run(struct http_upgrade *up)
{
        struct exchange *x = up->userdata;
        real_lock(&mu);
        if (n_handles < MAX_CONNS)
                handles[n_handles++] = (struct handle){up->urh, x->conn};
        pthread_mutex_unlock(&mu);
        if (x->held) { /* an exchange that ignores its socket */
                while (!__atomic_load_n(&release_held, __ATOMIC_RELAXED))
                        sleep_ms(10);
                return;
        }
        (void)fcntl(up->sock, F_SETFL, fcntl(up->sock, F_GETFL) & ~O_NONBLOCK);
        char buf[256];
        while (recv(up->sock, buf, sizeof(buf), 0) > 0)
                ;
}

static void exchange_done(struct http_upgrade *up)
{
        real_lock(&mu);
        exchanges_done++;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&mu);
        free(up->userdata);
}

/* ---- a 101 whose client is gone before it is written (/late) ---- */

static struct request *late_req;
static bool late_waiting, late_client_gone;
static size_t late_released, late_ran;
static int late_toe = -1; /* how libmicrohttpd said the request ended */

static void late_run(struct http_upgrade *up)
{
        real_lock(&mu);
        late_ran++;
        pthread_mutex_unlock(&mu);
}

static void late_done(struct http_upgrade *up)
{
        real_lock(&mu);
        late_released++;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&mu);
        free(up);
}

/* Once the client has reset its connection: a 101 queued as sbxd's relays queue theirs. */
static enum MHD_Result late_answer(struct request *req)
{
        __atomic_store_n(&late_waiting, true, __ATOMIC_RELEASE);
        while (!__atomic_load_n(&late_client_gone, __ATOMIC_ACQUIRE))
                sleep_ms(5);
        sleep_ms(50); /* the reset is in the socket */
        struct http_upgrade *up = calloc(1, sizeof(*up));
        if (!up)
                return MHD_NO;
        *up = (struct http_upgrade){
            .run = late_run, .done = late_done, .stack = 256 * 1024, .name = "late"};
        struct MHD_Response *resp = http_upgrade_response(up);
        if (!resp) {
                free(up);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "test");
        int r = http_upgrade_queue(req, up, resp);
        MHD_destroy_response(resp);
        if (r < 0)
                free(up);
        return r < 0 ? MHD_NO : MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
        if (*req_cls != late_req || !late_req)
                return;
        late_toe = (int)toe;
        http_upgrade_request_end(late_req);
        free(late_req);
        late_req = NULL;
        *req_cls = NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **req_cls)
{
        if (!*req_cls && strcmp(url, "/late") == 0) {
                late_req = calloc(1, sizeof(*late_req));
                if (!late_req)
                        return MHD_NO;
                late_req->conn = conn;
                *req_cls = late_req;
                return MHD_YES;
        }
        if (!*req_cls) {
                *req_cls = conn;
                return MHD_YES;
        }
        if (*req_cls == late_req)
                return late_answer(late_req);
        struct exchange *x = calloc(1, sizeof(*x));
        if (!x)
                return MHD_NO;
        x->conn = conn;
        x->held = strcmp(url, "/held") == 0;
        x->up = (struct http_upgrade){.userdata = x,
                                      .run = exchange_run,
                                      .done = exchange_done,
                                      .stack = 256 * 1024,
                                      .name = "test"};
        struct MHD_Response *resp = http_upgrade_response(&x->up);
        if (!resp) {
                free(x);
                return MHD_NO;
        }
        MHD_add_response_header(resp, MHD_HTTP_HEADER_UPGRADE, "test");
        enum MHD_Result r = MHD_queue_response(conn, MHD_HTTP_SWITCHING_PROTOCOLS, resp);
        MHD_destroy_response(resp);
        if (r != MHD_YES)
                free(x);
        return r;
}

/* ---- the client ---- */

static uint16_t port;

/* A connection upgraded with a 101 (its socket), or -1. */
static int open_upgraded(const char *path)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons(port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        char req[256], head[512];
        int n = snprintf(req, sizeof(req),
                         "GET %s HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                         "Upgrade: test\r\n\r\n",
                         path);
        if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
            send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) {
                if (fd >= 0)
                        close(fd);
                return -1;
        }
        size_t got = 0;
        while (got < sizeof(head) - 1) {
                ssize_t k = recv(fd, head + got, sizeof(head) - 1 - got, 0);
                if (k <= 0)
                        break;
                got += (size_t)k;
                head[got] = 0;
                if (strstr(head, "\r\n\r\n"))
                        return strncmp(head, "HTTP/1.1 101", 12) == 0 ? fd : (close(fd), -1);
        }
        close(fd);
        return -1;
}

/* Wait (under mu) until *counter reaches want; false after WAIT_MS. */
static bool wait_for(const size_t *counter, size_t want)
{
        int64_t end = now_ms() + WAIT_MS;
        real_lock(&mu);
        while (*counter < want && now_ms() < end) {
                pthread_mutex_unlock(&mu);
                sleep_ms(10);
                real_lock(&mu);
        }
        bool ok = *counter >= want;
        pthread_mutex_unlock(&mu);
        return ok;
}

static void *release_later(void *arg)
{
        sleep_ms(300);
        __atomic_store_n(&release_held, true, __ATOMIC_RELAXED);
        return NULL;
}

int main(void)
{
        real_action =
            (enum MHD_Result(*)(struct MHD_UpgradeResponseHandle *, enum MHD_UpgradeAction,
                                ...))dlsym(RTLD_NEXT, "MHD_upgrade_action");
        if (!real_lock || !real_action) {
                fprintf(stderr, "test-http-upgrade: dlsym failed\n");
                return 1;
        }
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        struct MHD_Daemon *d = MHD_start_daemon(
            MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                MHD_USE_POLL | MHD_ALLOW_UPGRADE,
            0, NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, &a, MHD_OPTION_NOTIFY_CONNECTION,
            on_connection, NULL, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL, MHD_OPTION_END);
        CHECK(d != NULL);
        if (!d)
                return unit_finish("test-http-upgrade");
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        port = di ? di->port : 0;

        /* A closes while B is upgraded: A's connection is freed only once its thread has left
         * MHD_upgrade_action() */
        int a_fd = open_upgraded("/");
        CHECK(a_fd >= 0);
        CHECK(wait_for(&n_handles, 1));
        real_lock(&mu);
        delay_locks = true;
        pthread_mutex_unlock(&mu);
        close(a_fd);
        sleep_ms(LOCK_DELAY_MS / 3); /* A's thread is inside the action now */
        int b_fd = open_upgraded("/");
        CHECK(b_fd >= 0);
        /* the daemon's thread has moved A to its cleanup list; one more connection wakes it
         * to free what is there (sbxd's daemon is woken by every new connection) */
        int wake = open_upgraded("/");
        CHECK(wake >= 0);
        CHECK(wait_for(&n_closed, 1));
        real_lock(&mu);
        delay_locks = false;
        pthread_mutex_unlock(&mu);
        CHECK_EQ_INT(freed_while_in_action, 0);

        /* a client resetting its connection before its 101 is written: the upgrade is
         * released once the request ends, its exchange never runs */
        int late_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in la = {.sin_family = AF_INET,
                                 .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        static const char late_head[] = "GET /late HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                                        "Upgrade: test\r\n\r\n";
        CHECK(late_fd >= 0 && connect(late_fd, (struct sockaddr *)&la, sizeof(la)) == 0);
        CHECK(send(late_fd, late_head, strlen(late_head), MSG_NOSIGNAL) ==
              (ssize_t)strlen(late_head));
        for (int64_t end = now_ms() + WAIT_MS;
             !__atomic_load_n(&late_waiting, __ATOMIC_ACQUIRE) && now_ms() < end;)
                sleep_ms(5);
        CHECK(__atomic_load_n(&late_waiting, __ATOMIC_ACQUIRE));
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        CHECK(setsockopt(late_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
        close(late_fd); /* a reset */
        __atomic_store_n(&late_client_gone, true, __ATOMIC_RELEASE);
        CHECK(wait_for(&late_released, 1));
        sleep_ms(200);
        real_lock(&mu);
        CHECK_EQ_INT(late_released, 1);
        CHECK_EQ_INT(late_ran, 0);
        CHECK(late_toe != (int)MHD_REQUEST_TERMINATED_COMPLETED_OK);
        pthread_mutex_unlock(&mu);
        CHECK(wait_for(&n_closed, 2)); /* A's, and this one's */

        /* the daemon stops with B's exchange running (its client still connected) and C's
         * ignoring its socket: B's ends at once, C's is given up on and ends later */
        int c_fd = open_upgraded("/held");
        CHECK(c_fd >= 0);
        close(wake);
        CHECK(wait_for(&n_closed, 3));
        CHECK(wait_for(&n_handles, 4));
        int64_t t0 = now_ms();
        http_upgrade_stop();
        int64_t took = now_ms() - t0;
        CHECK(took >= HTTP_UPGRADE_STOP_MS - 100 && took < HTTP_UPGRADE_STOP_MS + 2000);
        real_lock(&mu);
        CHECK_EQ_INT(exchanges_done, 3); /* all but C */
        pthread_mutex_unlock(&mu);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, release_later, NULL) == 0);
        MHD_stop_daemon(d); /* its close of C waits for C's thread */
        pthread_join(t, NULL);
        real_lock(&mu);
        CHECK_EQ_INT(exchanges_done, 4);
        CHECK_EQ_INT(n_closed, 5);
        CHECK_EQ_INT(freed_while_in_action, 0);
        CHECK_EQ_INT(action_after_close, 0);
        pthread_mutex_unlock(&mu);
        close(b_fd);
        close(c_fd);
        return unit_finish("test-http-upgrade");
}
