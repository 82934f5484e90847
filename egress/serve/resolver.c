/* SPDX-License-Identifier: Apache-2.0 */
#include "serve/resolver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy/dns-msg.h"
#include "policy/net-policy.h"
#include "fd-util.h"
#include "serve/fatal.h"
#include "log.h"
#include "macros.h"
#include "time-util.h"

struct pending {
        int fd; /* connected to upstream; -1: free */
        struct sockaddr_in6 client;
        struct dns_question q;                       /* the client's, its id included */
        uint8_t head[12 + DNS_NAME_MAX + 2 + 4 + 1]; /* its header and question, q.end bytes */
        uint16_t up_id;
        int slot;
        bool pin;
        int64_t deadline_us;
};

struct egress_dns {
        struct egress_dns_hooks h;
        int sock, stop;
        struct sockaddr_storage up;
        socklen_t up_len;
        pthread_t thread;
        struct pending pend[EGRESS_DNS_PENDING];
};

static int parse_upstream(const char *text, struct egress_dns *d)
{
        struct sockaddr_in *a4 = (struct sockaddr_in *)&d->up;
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&d->up;
        if (inet_pton(AF_INET, text, &a4->sin_addr) == 1) {
                a4->sin_family = AF_INET;
                a4->sin_port = htons(53);
                d->up_len = sizeof(*a4);
                return 0;
        }
        if (inet_pton(AF_INET6, text, &a6->sin6_addr) == 1) {
                a6->sin6_family = AF_INET6;
                a6->sin6_port = htons(53);
                d->up_len = sizeof(*a6);
                return 0;
        }
        return -EINVAL;
}

static void reply(struct egress_dns *d, const struct sockaddr_in6 *to, const void *msg, size_t len)
{
        (void)sendto(d->sock, msg, len, MSG_DONTWAIT, (const struct sockaddr *)to, sizeof(*to));
}

static void reply_error(struct egress_dns *d, const struct sockaddr_in6 *to, const uint8_t *query,
                        const struct dns_question *q, unsigned rcode)
{
        uint8_t out[DNS_MSG_MAX];
        size_t n = dns_error_reply(query, q, rcode, out, sizeof(out));
        if (n)
                reply(d, to, out, n);
}

/* internet: pass as is; an allowed domain: pass and pin; else refused (-EPERM). */
static int decide(const struct net_policy *p, const char *name, bool *ret_pin)
{
        *ret_pin = false;
        if (p->internet)
                return 0;
        for (size_t i = 0; i < p->n_allow; i++)
                if (net_rule_matches(&p->allow[i], name)) {
                        *ret_pin = true;
                        return 0;
                }
        return -EPERM;
}

static int forward(struct egress_dns *d, struct pending *p, uint8_t *msg, size_t len)
{
        _cleanup_close_ int fd =
            socket(d->up.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&d->up, d->up_len) < 0)
                return -errno;
        if (getrandom(&p->up_id, sizeof(p->up_id), 0) != sizeof(p->up_id))
                return -EIO;
        msg[0] = (uint8_t)(p->up_id >> 8);
        msg[1] = (uint8_t)p->up_id;
        if (send(fd, msg, len, 0) != (ssize_t)len)
                return -errno;
        p->fd = TAKE_FD(fd);
        p->deadline_us = now_us() + (int64_t)EGRESS_DNS_TIMEOUT_MS * 1000;
        return 0;
}

static void on_query(struct egress_dns *d)
{
        uint8_t msg[DNS_MSG_MAX + 1];
        struct sockaddr_in6 from;
        socklen_t fl = sizeof(from);
        ssize_t n =
            recvfrom(d->sock, msg, sizeof(msg), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        if (n <= 0 || n > DNS_MSG_MAX || from.sin6_family != AF_INET6)
                return;
        bool mapped = IN6_IS_ADDR_V4MAPPED(&from.sin6_addr);
        struct net_policy pol;
        int slot = d->h.lookup(d->h.arg, mapped ? AF_INET : AF_INET6,
                               mapped ? from.sin6_addr.s6_addr + 12 : from.sin6_addr.s6_addr, &pol);
        if (slot < 0)
                return; /* not from a sandbox's own address: no answer at all */
        struct dns_question q;
        bool pin = false;
        int r = dns_parse_question(msg, (size_t)n, &q);
        if (r >= 0 && !(q.flags & 0x8000) && (r = decide(&pol, q.name, &pin)) < 0)
                reply_error(d, &from, msg, &q, DNS_RCODE_REFUSED);
        net_policy_done(&pol);
        if (r < 0 || (q.flags & 0x8000))
                return;
        struct pending *p = NULL;
        for (size_t i = 0; i < EGRESS_DNS_PENDING && !p; i++)
                if (d->pend[i].fd < 0)
                        p = &d->pend[i];
        if (!p || forward(d, p, msg, (size_t)n) < 0) {
                reply_error(d, &from, msg, &q, DNS_RCODE_SERVFAIL);
                return;
        }
        p->client = from;
        p->q = q;
        memcpy(p->head, msg, MIN(q.end, sizeof(p->head)));
        msg[0] = (uint8_t)(q.id >> 8); /* forward() wrote the upstream id over it */
        msg[1] = (uint8_t)q.id;
        memcpy(p->head, msg, 2);
        p->slot = slot;
        p->pin = pin;
}

static void pending_done(struct pending *p)
{
        p->fd = safe_close(p->fd);
        p->fd = -1;
}

/* An answer from upstream: checked against the question, pinned when asked, passed on. */
static void on_answer(struct egress_dns *d, struct pending *p)
{
        uint8_t msg[DNS_MSG_MAX + 1];
        ssize_t n = recv(p->fd, msg, sizeof(msg), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        struct dns_question a;
        if (n <= 0 || n > DNS_MSG_MAX || dns_parse_question(msg, (size_t)n, &a) < 0 ||
            a.id != p->up_id || strcmp(a.name, p->q.name) != 0 || a.qtype != p->q.qtype ||
            a.qclass != p->q.qclass)
                return; /* not the answer (a late or forged datagram): keep waiting */
        if (p->pin) {
                struct dns_addrs addrs;
                if (dns_answer_addrs(msg, (size_t)n, &addrs) < 0) {
                        reply_error(d, &p->client, p->head, &p->q, DNS_RCODE_SERVFAIL);
                        pending_done(p);
                        return;
                }
                unsigned ttl = MIN(MAX(addrs.min_ttl, EGRESS_PIN_MIN_S), EGRESS_PIN_MAX_S);
                (void)d->h.pin(d->h.arg, p->slot, AF_INET, addrs.v4, addrs.n4, ttl);
                (void)d->h.pin(d->h.arg, p->slot, AF_INET6, addrs.v6, addrs.n6, ttl);
        }
        msg[0] = (uint8_t)(p->q.id >> 8);
        msg[1] = (uint8_t)p->q.id;
        reply(d, &p->client, msg, (size_t)n);
        pending_done(p);
}

static void *run(void *arg)
{
        struct egress_dns *d = arg;
        struct pollfd fds[2 + EGRESS_DNS_PENDING];
        struct pending *of[2 + EGRESS_DNS_PENDING];
        for (;;) {
                nfds_t n = 0;
                fds[n++] = (struct pollfd){.fd = d->stop, .events = POLLIN};
                fds[n++] = (struct pollfd){.fd = d->sock, .events = POLLIN};
                int64_t now = now_us();
                for (size_t i = 0; i < EGRESS_DNS_PENDING; i++) {
                        struct pending *p = &d->pend[i];
                        if (p->fd < 0)
                                continue;
                        if (p->deadline_us < now) {
                                reply_error(d, &p->client, p->head, &p->q, DNS_RCODE_SERVFAIL);
                                pending_done(p);
                                continue;
                        }
                        of[n] = p;
                        fds[n++] = (struct pollfd){.fd = p->fd, .events = POLLIN};
                }
                if (poll(fds, n, 250) < 0 && errno != EINTR)
                        egress_serve_fatal("polling", -errno);
                if (fds[0].revents)
                        break;
                for (nfds_t i = 2; i < n; i++)
                        if (fds[i].revents)
                                on_answer(d, of[i]);
                if (fds[1].revents)
                        for (int k = 0; k < 64; k++) /* a burst, bounded */
                                on_query(d);
        }
        return NULL;
}

int egress_dns_start(const struct egress_dns_hooks *hooks, const char *upstream, int sock,
                     struct egress_dns **ret)
{
        struct egress_dns *d = calloc(1, sizeof(*d));
        if (!d) {
                safe_close(sock);
                return -ENOMEM;
        }
        d->h = *hooks;
        d->sock = sock;
        d->stop = -1;
        for (size_t i = 0; i < EGRESS_DNS_PENDING; i++)
                d->pend[i].fd = -1;
        int r = parse_upstream(upstream, d);
        if (r >= 0 && (fd_set_nonblock(sock, 1) < 0 || (d->stop = eventfd(0, EFD_CLOEXEC)) < 0))
                r = -errno;
        if (r >= 0)
                r = -pthread_create(&d->thread, NULL, run, d);
        if (r < 0) {
                safe_close(d->sock);
                safe_close(d->stop);
                free(d);
                return r;
        }
        *ret = d;
        log_info("egress: resolver answering, upstream %s", upstream);
        return 0;
}

void egress_dns_stop(struct egress_dns *d)
{
        if (!d)
                return;
        uint64_t one = 1;
        if (write(d->stop, &one, sizeof(one)) == sizeof(one))
                pthread_join(d->thread, NULL);
        for (size_t i = 0; i < EGRESS_DNS_PENDING; i++)
                safe_close(d->pend[i].fd);
        safe_close(d->sock);
        safe_close(d->stop);
        free(d);
}
