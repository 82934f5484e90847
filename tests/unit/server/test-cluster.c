/* SPDX-License-Identifier: Apache-2.0 */
/* server/cluster: the etcd endpoint list (--cluster), the etcd client against no etcd, and the
 * signed hop header between nodes (hop-auth.h), and the relay's connections to owner nodes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/etcd.h"
#include "cluster/hop-auth.h"
#include "cluster/owner-conn.h"
#include "macros.h"
#include "unit.h"

static void test_endpoints(void)
{
        struct etcd *e = NULL;
        CHECK_EQ_INT(etcd_new("etcd://127.0.0.1:2379", &e), 0);
        CHECK_EQ_INT(e->n, 1);
        CHECK_STREQ(e->endpoint[0], "http://127.0.0.1:2379");
        etcd_free(e);
        e = NULL;
        CHECK_EQ_INT(etcd_new("etcd://a:1,b.example:2,[::1]:3", &e), 0);
        CHECK_EQ_INT(e->n, 3);
        CHECK_STREQ(e->endpoint[1], "http://b.example:2");
        CHECK_STREQ(e->endpoint[2], "http://[::1]:3");
        etcd_free(e);
        e = NULL;
        CHECK_EQ_INT(etcd_new("http://h:1", &e), 0); /* the gateway's own scheme */
        etcd_free(e);
        e = NULL;
        /* refused: another scheme, nothing, an empty member, a path, too many members */
        CHECK_EQ_INT(etcd_new("https://h:1", &e), -EINVAL);
        CHECK_EQ_INT(etcd_new("etcd://", &e), -EINVAL);
        CHECK_EQ_INT(etcd_new("etcd://a:1,,b:2", &e), -EINVAL);
        CHECK_EQ_INT(etcd_new("etcd://a:1/x", &e), -EINVAL);
        CHECK_EQ_INT(etcd_new("etcd://a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9", &e), -EINVAL);
        CHECK(e == NULL);
}

static void test_unreachable(void)
{
        /* port 1 on loopback: refused at once, every call says so (no hang, no crash) */
        struct etcd *e = NULL;
        CHECK_EQ_INT(etcd_new("etcd://127.0.0.1:1,127.0.0.1:1", &e), 0);
        CHECK_EQ_INT(etcd_put(e, "/k", "v", 0), -EHOSTUNREACH);
        int64_t id = 0;
        CHECK_EQ_INT(etcd_lease_grant(e, 5, &id), -EHOSTUNREACH);
        struct etcd_kv *kvs = NULL;
        size_t n = 0;
        CHECK_EQ_INT(etcd_range_prefix(e, "/k", &kvs, &n, NULL), -EHOSTUNREACH);
        etcd_free(e);
}

static void test_hop_auth(void)
{
        const char *k = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        const char *k2 = "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        const char *t = "/files?path=%2Fhome%2Fuser%2Fa&signature=v1_x";
        time_t now = 1700000000;
        char v[HOP_AUTH_VALUE_MAX];
        hop_auth_sign(k, "GET", t, now, v);
        CHECK(strncmp(v, "v1 1700000000 ", 14) == 0);
        CHECK_EQ_INT(strlen(v), 14 + 64);
        /* valid: now, and within the window either way */
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now), 0);
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now + HOP_AUTH_WINDOW_S), 0);
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now - HOP_AUTH_WINDOW_S), 0);
        /* expired, or from the future */
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now + HOP_AUTH_WINDOW_S + 1), -ETIME);
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now - HOP_AUTH_WINDOW_S - 1), -ETIME);
        /* forged: another secret, another method or target, a changed time or MAC */
        CHECK_EQ_INT(hop_auth_verify(k2, v, "GET", t, now), -EACCES);
        CHECK_EQ_INT(hop_auth_verify(k, v, "POST", t, now), -EACCES);
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", "/files?path=%2Fetc&signature=v1_x", now),
                     -EACCES);
        char w[HOP_AUTH_VALUE_MAX + 8];
        snprintf(w, sizeof(w), "v1 1700000001 %s", v + 14);
        CHECK_EQ_INT(hop_auth_verify(k, w, "GET", t, now), -EACCES);
        snprintf(w, sizeof(w), "%s", v);
        w[20] = w[20] == '0' ? '1' : '0';
        CHECK_EQ_INT(hop_auth_verify(k, w, "GET", t, now), -EACCES);
        /* what the old nodes sent, and other junk: malformed */
        CHECK_EQ_INT(hop_auth_verify(k, "1", "GET", t, now), -EBADMSG);
        CHECK_EQ_INT(hop_auth_verify(k, "", "GET", t, now), -EBADMSG);
        CHECK_EQ_INT(hop_auth_verify(k, "v1 1700000000 abc", "GET", t, now), -EBADMSG);
        CHECK_EQ_INT(hop_auth_verify(k, "v1 -5 abc", "GET", t, now), -EBADMSG);
        snprintf(w, sizeof(w), "v1 1700000000 %s ", v + 14);
        CHECK_EQ_INT(hop_auth_verify(k, w, "GET", t, now), -EBADMSG);
        snprintf(w, sizeof(w), "%s", v);
        w[20] = 'G';
        CHECK_EQ_INT(hop_auth_verify(k, w, "GET", t, now), -EBADMSG);
        /* no secret: nothing is valid, nothing is sent */
        CHECK_EQ_INT(hop_auth_verify(NULL, v, "GET", t, now), -EACCES);
        CHECK_EQ_INT(hop_auth_verify("", v, "GET", t, now), -EACCES);
        hop_auth_set(NULL);
        char line[HOP_AUTH_VALUE_MAX];
        CHECK(!hop_auth_value("GET", t, line));
        CHECK_EQ_INT(hop_auth_check(v, "GET", t), -ETIME); /* 2023: expired before the MAC */
        /* the process's secret: a value that the process accepts */
        hop_auth_set(k);
        CHECK(hop_auth_value("GET", t, line));
        CHECK(strncmp(line, "v1 ", 3) == 0);
        CHECK_EQ_INT(hop_auth_check(line, "GET", t), 0);
        CHECK_EQ_INT(hop_auth_check(line, "DELETE", t), -EACCES);
        hop_auth_set(NULL);
        CHECK_EQ_INT(hop_auth_check(line, "GET", t), -EACCES);
}

/* The relay's owner connections (cluster/owner-conn.h) against a socket played by the test. */
static int listener(char addr[static 32])
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t l = sizeof(a);
        CHECK(fd >= 0);
        CHECK_EQ_INT(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
        CHECK_EQ_INT(listen(fd, 8), 0);
        CHECK_EQ_INT(getsockname(fd, (struct sockaddr *)&a, &l), 0);
        snprintf(addr, 32, "127.0.0.1:%u", ntohs(a.sin_port));
        return fd;
}

static void say(int fd, const char *s)
{
        CHECK_EQ_INT((int)write(fd, s, strlen(s)), (int)strlen(s));
}

/* The whole body of the answer in progress, as the response callback would read it. */
static size_t read_body(struct owner_conn *c, char *out, size_t max)
{
        size_t got = 0;
        ssize_t n;
        while ((n = owner_conn_body_read(c, -1, out + got, MIN((size_t)7, max - got))) > 0)
                got += (size_t)n;
        CHECK_EQ_INT((int)n, 0);
        out[got] = 0;
        return got;
}

static void test_owner_conn(void)
{
        char addr[32], body[256];
        int lfd = listener(addr);
        struct owner_conn *c = NULL;
        struct owner_head *h = calloc(1, sizeof(*h));
        CHECK_EQ_INT(owner_conn_open(addr, false, &c), 0);
        CHECK(!c->reused);
        int s = accept(lfd, NULL, NULL);
        /* a 100 Continue skipped; a chunked answer with an extension and a trailer; then a
         * second answer on the same connection, by length */
        say(s, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
               "Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\nB\r\n, relay all\r\n"
               "0\r\nX-Trailer: t\r\n\r\n");
        CHECK_EQ_INT(owner_conn_read_head(c, -1, false, h), 0);
        CHECK_EQ_INT((int)h->status, 200);
        CHECK_STREQ(owner_head_get(h, "content-type"), "text/plain");
        CHECK(owner_conn_body_start(c, h, "GET"));
        CHECK_EQ_INT((int)read_body(c, body, sizeof(body) - 1), 16);
        CHECK_STREQ(body, "hello, relay all");
        owner_conn_release(c, true);
        /* reused from the pool: the same socket */
        CHECK_EQ_INT(owner_conn_open(addr, false, &c), 0);
        CHECK(c->reused);
        say(s, "HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\nabcd");
        CHECK_EQ_INT(owner_conn_read_head(c, -1, false, h), 0);
        CHECK_EQ_INT((int)h->status, 201);
        CHECK(owner_conn_body_start(c, h, "POST"));
        CHECK_EQ_INT((int)read_body(c, body, sizeof(body) - 1), 4);
        owner_conn_release(c, true);
        /* the owner closes the idle connection: not taken again, a new one instead */
        close(s);
        usleep(20000);
        CHECK_EQ_INT(owner_conn_open(addr, false, &c), 0);
        CHECK(!c->reused);
        s = accept(lfd, NULL, NULL);
        /* no length: up to the close, and not reusable; a HEAD answer has no body */
        say(s, "HTTP/1.0 200 OK\r\n\r\nuntil close");
        shutdown(s, SHUT_WR);
        CHECK_EQ_INT(owner_conn_read_head(c, -1, false, h), 0);
        CHECK(!owner_conn_body_start(c, h, "GET"));
        CHECK_STREQ((read_body(c, body, sizeof(body) - 1), body), "until close");
        owner_conn_release(c, false);
        close(s);
        /* closed before a byte: -EPIPE (the caller may replay); a body cut short: -EPROTO */
        CHECK_EQ_INT(owner_conn_open(addr, true, &c), 0);
        s = accept(lfd, NULL, NULL);
        close(s);
        CHECK_EQ_INT(owner_conn_read_head(c, -1, false, h), -EPIPE);
        owner_conn_release(c, false);
        CHECK_EQ_INT(owner_conn_open(addr, true, &c), 0);
        s = accept(lfd, NULL, NULL);
        say(s, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        close(s);
        CHECK_EQ_INT(owner_conn_read_head(c, -1, false, h), 0);
        owner_conn_body_start(c, h, "GET");
        CHECK_EQ_INT((int)owner_conn_body_read(c, -1, body, sizeof(body)), 3);
        CHECK_EQ_INT((int)owner_conn_body_read(c, -1, body, sizeof(body)), -EPROTO);
        owner_conn_release(c, false);
        /* a 101 only to an upgrade; a head past OWNER_HEAD_MAX */
        CHECK_EQ_INT(owner_conn_open(addr, true, &c), 0);
        s = accept(lfd, NULL, NULL);
        say(s, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
        CHECK_EQ_INT(owner_conn_read_head(c, -1, false, h), -EPROTO);
        owner_conn_release(c, false);
        close(s);
        CHECK_EQ_INT(owner_conn_open(addr, true, &c), 0);
        s = accept(lfd, NULL, NULL);
        char *big = malloc(OWNER_HEAD_MAX + 64);
        memset(big, 'a', OWNER_HEAD_MAX + 63);
        memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
        big[OWNER_HEAD_MAX + 63] = 0;
        say(s, big);
        CHECK_EQ_INT(owner_conn_read_head(c, -1, false, h), -E2BIG);
        owner_conn_release(c, false);
        close(s);
        free(big);
        /* nobody listening: refused at once */
        close(lfd);
        CHECK_EQ_INT(owner_conn_open(addr, false, &c), -ECONNREFUSED);
        free(h);
}

int main(void)
{
        test_endpoints();
        test_unreachable();
        test_hop_auth();
        test_owner_conn();
        return unit_finish("test-cluster");
}
