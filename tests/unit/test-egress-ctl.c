/* SPDX-License-Identifier: Apache-2.0 */
/* The control channel of sbx-egress (api/egress-ctl.md): every message type round-trips,
 * descriptors travel with their message, anything out of the contract is refused (its
 * descriptors closed), and the channel's calls get their answers (api/egress-chan.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egress-chan.h"
#include "egress-ctl.h"
#include "unit.h"

static struct egress_msg round_trip(const struct egress_msg *m)
{
        char *text = NULL;
        size_t len = 0;
        struct egress_msg out = {};
        const char *why = NULL;
        CHECK_EQ_INT(egress_msg_encode(m, &text, &len), 0);
        CHECK_EQ_INT(egress_msg_decode(text, len, egress_msg_fds(m->type), &out, &why), 0);
        free(text);
        return out;
}

static void test_round_trips(void)
{
        cJSON *pol = cJSON_Parse("{\"internet\":false,\"allowOut\":[\"a.test\"]}");
        struct egress_msg m = {.type = EGRESS_MSG_POLICY, .id = 7, .slot = 4095, .policy = pol};
        struct egress_msg o = round_trip(&m);
        CHECK(o.type == EGRESS_MSG_POLICY && o.id == 7 && o.slot == 4095);
        CHECK(cJSON_Compare(o.policy, pol, 1));
        egress_msg_done(&o);
        cJSON_Delete(pol);

        struct egress_msg pin = {.type = EGRESS_MSG_PIN,
                                 .id = 1,
                                 .slot = 3,
                                 .family = AF_INET6,
                                 .ttl = 300,
                                 .n_addrs = 2};
        inet_pton(AF_INET6, "2001:db8::1", pin.addrs[0]);
        inet_pton(AF_INET6, "2001:db8::2", pin.addrs[1]);
        o = round_trip(&pin);
        CHECK(o.family == AF_INET6 && o.ttl == 300 && o.n_addrs == 2);
        CHECK(!memcmp(o.addrs, pin.addrs, sizeof(pin.addrs[0]) * 2));
        egress_msg_done(&o);

        char *hosts[] = {(char *)"deb.debian.org", (char *)"security.debian.org"};
        struct egress_msg b = {.type = EGRESS_MSG_BUILD,
                               .id = 9,
                               .name = (char *)"build-1",
                               .hosts = hosts,
                               .n_hosts = 2};
        o = round_trip(&b);
        CHECK(o.n_hosts == 2 && !strcmp(o.hosts[1], "security.debian.org"));
        CHECK_STREQ(o.name, "build-1");
        egress_msg_done(&o);

        struct egress_msg v = {.type = EGRESS_MSG_VALUE, .id = 2, .text = (char *)"s3cr\"t\n"};
        o = round_trip(&v);
        CHECK_STREQ(o.text, "s3cr\"t\n");
        CHECK_EQ_INT(o.error, 0);
        egress_msg_done(&o);
        struct egress_msg ve = {.type = EGRESS_MSG_VALUE, .id = 2, .error = -ENOENT};
        o = round_trip(&ve);
        CHECK(o.error == -ENOENT && o.text == NULL);
        egress_msg_done(&o);

        struct egress_msg h = {.type = EGRESS_MSG_HELLO,
                               .upstream = (char *)"198.51.100.10",
                               .ca_key = (char *)"KEY",
                               .ca_cert = (char *)"CERT"};
        o = round_trip(&h);
        CHECK(!strcmp(o.upstream, "198.51.100.10") && !strcmp(o.ca_key, "KEY") && !o.upstream_ca);
        egress_msg_done(&o);

        struct egress_msg n = {.type = EGRESS_MSG_NOTE, .name = (char *)"b", .text = (char *)""};
        o = round_trip(&n);
        CHECK(o.type == EGRESS_MSG_NOTE && o.id == 0 && !strcmp(o.text, ""));
        egress_msg_done(&o);
}

static int refused(const char *text, size_t n_fds)
{
        struct egress_msg m;
        const char *why = NULL;
        int r = egress_msg_decode(text, strlen(text), n_fds, &m, &why);
        CHECK(r < 0 || why);
        if (r >= 0)
                egress_msg_done(&m);
        return r == -EBADMSG;
}

static void test_refused(void)
{
        CHECK(refused("", 0));
        CHECK(refused("[]", 0));
        CHECK(refused("{\"type\":\"nope\",\"id\":1}", 0));
        CHECK(refused("{\"type\":\"serve\"}", 0));            /* no id */
        CHECK(refused("{\"type\":\"serve\",\"id\":-1}", 0));  /* out of range */
        CHECK(refused("{\"type\":\"serve\",\"id\":1.5}", 0)); /* not whole */
        CHECK(refused("{\"type\":\"serve\",\"id\":1}", 1));   /* a descriptor too many */
        CHECK(refused("{\"type\":\"build\",\"id\":1,\"name\":\"b\",\"hosts\":[]}", 0));
        CHECK(refused("{\"type\":\"forget\",\"id\":1,\"slot\":65536}", 0));
        CHECK(refused("{\"type\":\"policy\",\"id\":1,\"slot\":1,\"policy\":[]}", 0));
        CHECK(refused("{\"type\":\"pin\",\"id\":1,\"slot\":1,\"family\":5,\"ttl\":1,"
                      "\"addrs\":[\"1.2.3.4\"]}",
                      0));
        CHECK(refused("{\"type\":\"pin\",\"id\":1,\"slot\":1,\"family\":4,\"ttl\":1,"
                      "\"addrs\":[\"::1\"]}",
                      0));
        CHECK(refused("{\"type\":\"pin\",\"id\":1,\"slot\":1,\"family\":4,\"ttl\":0,"
                      "\"addrs\":[\"1.2.3.4\"]}",
                      0));
        CHECK(refused("{\"type\":\"value\",\"id\":1,\"error\":0}", 0)); /* no value, no error */
        CHECK(refused("{\"type\":\"ack\",\"id\":1,\"error\":5}", 0));
        CHECK(refused("{\"type\":\"secret\",\"id\":1,\"slot\":1,\"name\":\"a\\u0000b\"}", 0));
        CHECK(refused("{\"type\":\"policy\",\"id\":1,\"slot\":1,\"policy\":"
                      "{\"a\":[[[[[[[[[]]]]]]]]]}}",
                      0));
        char many[4096] =
            "{\"type\":\"pin\",\"id\":1,\"slot\":1,\"family\":4,\"ttl\":1,\"addrs\":[";
        for (int i = 0; i <= EGRESS_CTL_ADDRS_MAX; i++)
                strcat(many, i ? ",\"1.2.3.4\"" : "\"1.2.3.4\"");
        strcat(many, "]}");
        CHECK(refused(many, 0));
        /* and what the encoder refuses to write */
        char *text;
        size_t len;
        struct egress_msg bad = {.type = EGRESS_MSG_FORGET, .slot = -1};
        CHECK_EQ_INT(egress_msg_encode(&bad, &text, &len), -EINVAL);
        struct egress_msg nohost = {
            .type = EGRESS_MSG_HELLO, .ca_key = (char *)"k", .ca_cert = (char *)"c"};
        CHECK_EQ_INT(egress_msg_encode(&nohost, &text, &len), -EINVAL);
}

static ino_t ino(int fd)
{
        struct stat st;
        return fstat(fd, &st) == 0 ? st.st_ino : 0;
}

static void test_socket(void)
{
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
        int a = open("/dev/null", O_RDONLY | O_CLOEXEC), b = open("/", O_RDONLY | O_CLOEXEC),
            c = dup(a);
        struct egress_msg h = {.type = EGRESS_MSG_HELLO,
                               .upstream = (char *)"::1",
                               .ca_key = (char *)"K",
                               .ca_cert = (char *)"C",
                               .fds = {a, b, c},
                               .n_fds = 3};
        CHECK_EQ_INT(egress_msg_send(sv[0], &h), 0);
        struct egress_msg got;
        const char *why;
        CHECK_EQ_INT(egress_msg_recv(sv[1], &got, &why), 1);
        CHECK(got.n_fds == 3 && ino(got.fds[1]) == ino(b) && ino(got.fds[0]) == ino(a));
        CHECK(fcntl(got.fds[0], F_GETFD) & FD_CLOEXEC);
        egress_msg_done(&got);

        /* a message whose type wants no descriptor, sent with one: refused, the fd closed */
        struct egress_msg s = {.type = EGRESS_MSG_BUILD_END, .name = (char *)"x"};
        CHECK_EQ_INT(egress_msg_send(sv[0], &s), 0);
        CHECK_EQ_INT(egress_msg_recv(sv[1], &got, &why), 1);
        egress_msg_done(&got);
        const char raw[] = "{\"type\":\"serve\",\"id\":3}";
        struct iovec iov = {.iov_base = (void *)raw, .iov_len = sizeof(raw) - 1};
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } cm = {};
        struct msghdr mh = {.msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = cm.buf,
                            .msg_controllen = sizeof(cm.buf)};
        struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
        ch->cmsg_level = SOL_SOCKET;
        ch->cmsg_type = SCM_RIGHTS;
        ch->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(ch), &a, sizeof(int));
        CHECK(sendmsg(sv[0], &mh, 0) == (ssize_t)iov.iov_len);
        CHECK_EQ_INT(egress_msg_recv(sv[1], &got, &why), -EBADMSG);
        close(a);
        close(b);
        close(c);
        close(sv[0]);
        CHECK_EQ_INT(egress_msg_recv(sv[1], &got, &why), 0); /* the other end closed */
        close(sv[1]);
}

/* ---- the channel ---- */

static int served_secret(void *arg, struct egress_msg *m, char **value)
{
        (void)arg;
        if (m->type != EGRESS_MSG_SECRET)
                return -EPROTO;
        if (strcmp(m->name, "known") != 0)
                return -ENOENT;
        *value = strdup("the value");
        return 0;
}

static void *serve_main(void *arg)
{
        const char *why;
        return (void *)(intptr_t)egress_chan_run(arg, served_secret, NULL, &why);
}

static int no_requests(void *arg, struct egress_msg *m, char **value)
{
        (void)arg, (void)m, (void)value;
        return -EPROTO;
}

static void *client_main(void *arg)
{
        const char *why;
        return (void *)(intptr_t)egress_chan_run(arg, no_requests, NULL, &why);
}

static void test_chan(void)
{
        int sv[2];
        CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
        struct egress_chan *server, *client;
        CHECK_EQ_INT(egress_chan_new(sv[0], &server), 0);
        CHECK_EQ_INT(egress_chan_new(sv[1], &client), 0);
        pthread_t ts, tc;
        pthread_create(&ts, NULL, serve_main, server);
        pthread_create(&tc, NULL, client_main, client);
        struct egress_msg q = {.type = EGRESS_MSG_SECRET, .slot = 1, .name = (char *)"known"}, a;
        CHECK_EQ_INT(egress_chan_call(client, &q, &a), 0);
        CHECK(a.type == EGRESS_MSG_VALUE && a.error == 0 && !strcmp(a.text, "the value"));
        egress_msg_done(&a);
        q.name = (char *)"unknown";
        CHECK_EQ_INT(egress_chan_call(client, &q, &a), 0);
        CHECK(a.type == EGRESS_MSG_VALUE && a.error == -ENOENT && !a.text);
        egress_msg_done(&a);
        struct egress_msg p = {.type = EGRESS_MSG_SERVE};
        CHECK_EQ_INT(egress_chan_call(client, &p, &a), 0);
        CHECK(a.type == EGRESS_MSG_ACK && a.error == -EPROTO);
        egress_msg_done(&a);
        /* the server goes: its reader ends, the client's reader sees the end, calls fail */
        egress_chan_shutdown(server);
        void *rv;
        pthread_join(ts, &rv);
        CHECK_EQ_INT((int)(intptr_t)rv, 0);
        pthread_join(tc, &rv);
        CHECK_EQ_INT((int)(intptr_t)rv, 0);
        CHECK_EQ_INT(egress_chan_call(client, &p, &a), -EPIPE);
        egress_chan_free(server);
        egress_chan_free(client);
}

int main(void)
{
        test_round_trips();
        test_refused();
        test_socket();
        test_chan();
        return unit_finish("test-egress-ctl");
}
