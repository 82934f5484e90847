/* SPDX-License-Identifier: Apache-2.0 */
/* guest-agent/port/http1.c: the request head the agent writes to a user port, the response
 * head it reads back, and the chunked decoder (cut at every position). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "agent-call.h"
#include "port/http1.h"
#include "port/relay.h"
#include "routes.h"
#include "unit.h"

static void test_req_head(void)
{
        struct sbx_header hs[] = {{"Host", "8000-abc.sbx.localhost:3000"},
                                  {"Content-Length", "5"},
                                  {"Connection", "keep-alive"},
                                  {"X-A", "b"}};
        struct sbx_req_head h = {.port = 8000,
                                 .method = "POST",
                                 .path = "/a%20b",
                                 .query = "x=1",
                                 .n_headers = 4,
                                 .headers = hs};
        struct buf b = {0};
        enum port_req_body body;
        CHECK_EQ_INT(port_req_head_build(&h, false, &b, &body), 0);
        CHECK_EQ_INT(body, PORT_REQ_LENGTH);
        CHECK_STREQ(buf_str(&b), "POST /a%20b?x=1 HTTP/1.1\r\n"
                                 "Host: 8000-abc.sbx.localhost:3000\r\n"
                                 "Content-Length: 5\r\n"
                                 "X-A: b\r\n"
                                 "Connection: close\r\n\r\n");
        buf_done(&b);

        /* a body of unknown length goes chunked; Content-Length loses to Transfer-Encoding */
        hs[2] = (struct sbx_header){"Transfer-Encoding", "chunked"};
        h.query = "";
        CHECK_EQ_INT(port_req_head_build(&h, false, &b, &body), 0);
        CHECK_EQ_INT(body, PORT_REQ_CHUNKED);
        CHECK_STREQ(buf_str(&b), "POST /a%20b HTTP/1.1\r\n"
                                 "Host: 8000-abc.sbx.localhost:3000\r\n"
                                 "X-A: b\r\n"
                                 "Transfer-Encoding: chunked\r\n"
                                 "Connection: close\r\n\r\n");
        buf_done(&b);

        /* an upgrade */
        struct sbx_header up[] = {{"Host", "h"}, {"Upgrade", "websocket"}};
        struct sbx_req_head u = {
            .method = "GET", .path = "/ws", .query = "", .n_headers = 2, .headers = up};
        CHECK_EQ_INT(port_req_head_build(&u, true, &b, &body), 0);
        CHECK_EQ_INT(body, PORT_REQ_NONE);
        CHECK_STREQ(buf_str(&b), "GET /ws HTTP/1.1\r\nHost: h\r\n"
                                 "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
        buf_done(&b);

        /* nothing can split the request */
        struct sbx_header bad[] = {{"X", "a\r\nX-Evil: 1"}};
        static const struct {
                const char *method, *path, *query;
                size_t n_headers; /* of bad */
        } split[] = {
            {"GET", "/", "", 1},
            {"GET", "/ HTTP/1.0\r\n", "", 0},
            {"GET", "/", "a\nb", 0},
            {"GET /x", "/", "", 0},
        };
        for (size_t i = 0; i < sizeof(split) / sizeof(split[0]); i++) {
                struct sbx_req_head e = {.method = split[i].method,
                                         .path = split[i].path,
                                         .query = split[i].query,
                                         .n_headers = split[i].n_headers,
                                         .headers = bad};
                unit_case = split[i].n_headers ? "a header" : split[i].method;
                CHECK_EQ_INT(port_req_head_build(&e, false, &b, &body), -EINVAL);
                buf_done(&b);
        }
        unit_case = NULL;
}

static int parse(const char *text, bool head_request, struct port_resp *r, char **ret_buf)
{
        size_t len = strlen(text);
        char *b = strdup(text);
        size_t end = port_resp_head_end(b, len);
        *ret_buf = b;
        if (end == 0)
                return -EAGAIN;
        return port_resp_parse(b, end, head_request, r);
}

static void test_resp_head(void)
{
        struct port_resp r;
        char *b;
        CHECK_EQ_INT(parse("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n"
                           "X-Y:  spaced  \r\n\r\nbody",
                           false, &r, &b),
                     0);
        CHECK_EQ_INT(r.status, 200);
        CHECK_EQ_INT(r.n_headers, 3);
        CHECK_STREQ(r.headers[2].name, "X-Y");
        CHECK_STREQ(r.headers[2].value, "spaced");
        CHECK_EQ_INT(r.body, PORT_RESP_LENGTH);
        CHECK_EQ_INT(r.length, 12);
        CHECK(port_resp_header_forwarded(&r, "Content-Length"));
        CHECK(!port_resp_header_forwarded(&r, "Connection"));
        CHECK(!port_resp_header_forwarded(&r, "Upgrade"));
        free(b);

        /* how the body is framed; a header forwarded or dropped with it (NULL: not checked) */
        static const struct {
                const char *head;
                bool head_request;
                enum port_resp_body body;
                const char *forwarded, *dropped;
        } framing[] = {
            {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\nContent-Length: 3\r\n\r\n",
             false, PORT_RESP_CHUNKED, NULL, "Content-Length"},
            {"HTTP/1.0 200\r\n\r\n", false, PORT_RESP_CLOSE, NULL, NULL},
            {"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", true, PORT_RESP_NONE, NULL, NULL},
            {"HTTP/1.1 304 Not Modified\r\n\r\n", false, PORT_RESP_NONE, NULL, NULL},
            {"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: "
             "Upgrade\r\n\r\n",
             false, PORT_RESP_CLOSE, "Upgrade", NULL},
        };
        for (size_t i = 0; i < sizeof(framing) / sizeof(framing[0]); i++) {
                unit_case = framing[i].head;
                CHECK_EQ_INT(parse(framing[i].head, framing[i].head_request, &r, &b), 0);
                CHECK_EQ_INT(r.body, framing[i].body);
                if (framing[i].forwarded)
                        CHECK(port_resp_header_forwarded(&r, framing[i].forwarded));
                if (framing[i].dropped)
                        CHECK(!port_resp_header_forwarded(&r, framing[i].dropped));
                free(b);
        }
        unit_case = NULL;

        CHECK_EQ_INT(parse("HTTP/1.1 200 OK\r\n", false, &r, &b), -EAGAIN); /* incomplete */
        free(b);
        static const char *const bad[] = {
            "HTTP/2 200 OK\r\n\r\n",
            "HTTP/1.1 20 OK\r\n\r\n",
            "HTTP/1.1 600 X\r\n\r\n",
            "HTTP/1.1 200OK\r\n\r\n",
            "ICY 200 OK\r\n\r\n",
            "HTTP/1.1 200 OK\r\nNo-Colon\r\n\r\n",
            "HTTP/1.1 200 OK\r\n: empty\r\n\r\n",
            "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            "HTTP/1.1 200 OK\nA: b\r\n\r\n",
            "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n",
            "HTTP/1.1 200 O\rK\r\n\r\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int e = parse(bad[i], false, &r, &b);
                if (e != -EPROTO)
                        fprintf(stderr, "accepted: %s\n", bad[i]);
                CHECK_EQ_INT(e, -EPROTO);
                free(b);
        }

        /* too many headers */
        struct buf many = {0};
        buf_adds(&many, "HTTP/1.1 200 OK\r\n");
        for (unsigned i = 0; i <= PORT_MAX_RESP_HEADERS; i++)
                buf_printf(&many, "H%u: v\r\n", i);
        buf_adds(&many, "\r\n");
        CHECK_EQ_INT(parse(buf_str(&many), false, &r, &b), -EPROTO);
        free(b);
        buf_done(&many);
}

/* Decode in at every cut into two pieces: the same output and verdict each time. */
static void chunked_all_cuts(const char *in, const char *want, int verdict)
{
        size_t n = strlen(in);
        for (size_t cut = 0; cut <= n; cut++) {
                struct port_chunked c = {0};
                char out[256] = "", a[256], b2[256];
                size_t o1 = 0, o2 = 0;
                memcpy(a, in, cut);
                memcpy(b2, in + cut, n - cut);
                int r = port_chunked_decode(&c, (uint8_t *)a, cut, &o1);
                memcpy(out, a, o1);
                if (r == 0) {
                        r = port_chunked_decode(&c, (uint8_t *)b2, n - cut, &o2);
                        if (r >= 0)
                                memcpy(out + o1, b2, o2);
                }
                CHECK_EQ_INT(r, verdict);
                if (verdict >= 0)
                        CHECK_STREQ(out, want);
        }
}

static void test_chunked(void)
{
        chunked_all_cuts("5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n", "hello world", 1);
        chunked_all_cuts("A\r\n0123456789\r\n0\r\nTrailer: x\r\n\r\nignored", "0123456789", 1);
        chunked_all_cuts("3\r\nabc\r\n", "abc", 0); /* more needed */
        chunked_all_cuts("3\r\nabcd\r\n0\r\n\r\n", "", -EPROTO);
        chunked_all_cuts("x\r\n", "", -EPROTO);
        chunked_all_cuts("\r\n", "", -EPROTO);
        chunked_all_cuts("11111111111111111\r\n", "", -EPROTO); /* past 2^64 */
        /* a size line past PORT_MAX_CHUNK_LINE */
        char *long_ext = malloc(PORT_MAX_CHUNK_LINE + 16);
        memset(long_ext, 'a', PORT_MAX_CHUNK_LINE + 8);
        memcpy(long_ext, "1;", 2);
        long_ext[PORT_MAX_CHUNK_LINE + 8] = 0;
        struct port_chunked c = {0};
        size_t o;
        CHECK_EQ_INT(port_chunked_decode(&c, (uint8_t *)long_ext, strlen(long_ext), &o), -EPROTO);
        free(long_ext);
}

static void test_ports(void)
{
        CHECK(agent_port_is_user(8000));
        CHECK(agent_port_is_user(1));
        CHECK(!agent_port_is_user(0));
        CHECK(!agent_port_is_user(49983));
        CHECK(!agent_port_is_user(49999));
}

/* ---- the relay against a server on loopback (the test's own network namespace) ---- */

struct fake {
        int lfd;
        uint16_t port;
        const char *answer;
        const char *until; /* the request is complete once this arrived */
        char got[8192];
        size_t got_len;
        pthread_t t;
};

static void *fake_thread(void *arg)
{
        struct fake *f = arg;
        int c = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
                return NULL;
        while (f->got_len < sizeof(f->got) - 1 && !strstr(f->got, f->until)) {
                struct pollfd p = {.fd = c, .events = POLLIN};
                if (poll(&p, 1, 5000) <= 0)
                        break;
                ssize_t n = read(c, f->got + f->got_len, sizeof(f->got) - 1 - f->got_len);
                if (n <= 0)
                        break;
                f->got_len += (size_t)n;
                f->got[f->got_len] = 0;
        }
        if (write(c, f->answer, strlen(f->answer)) < 0)
                f->got_len = 0;
        close(c);
        return NULL;
}

static void fake_start(struct fake *f, const char *answer, const char *until)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t l = sizeof(a);
        memset(f, 0, sizeof(*f));
        f->answer = answer;
        f->until = until;
        f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(f->lfd, 4) == 0 &&
              getsockname(f->lfd, (struct sockaddr *)&a, &l) == 0);
        f->port = ntohs(a.sin_port);
        pthread_create(&f->t, NULL, fake_thread, f);
}

static void fake_stop(struct fake *f)
{
        pthread_join(f->t, NULL);
        close(f->lfd);
}

static void test_relay(void)
{
        struct fake f;
        struct response r;
        agent_server_set_routes(&agent_routes);

        /* a GET; a chunked answer comes back decoded, hop-by-hop headers gone */
        fake_start(&f,
                   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n"
                   "X-Srv: 1\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                   "\r\n\r\n");
        struct sbx_header host = {"Host", "8000-x.sbx.localhost"};
        call(f.port, "GET", "/p%2F", "q=1", &host, 1, NULL, 0, 1, &r);
        fake_stop(&f);
        CHECK_STREQ(f.got, "GET /p%2F?q=1 HTTP/1.1\r\nHost: 8000-x.sbx.localhost\r\n"
                           "Connection: close\r\n\r\n");
        CHECK_EQ_INT(r.status, 200);
        CHECK_EQ_INT(r.served, 200);
        CHECK_STREQ(response_header(&r, "X-Srv"), "1");
        CHECK(response_header(&r, "Transfer-Encoding") == NULL);
        CHECK(response_header(&r, "Connection") == NULL);
        CHECK_STREQ((char *)r.body, "hello world");
        response_done(&r);

        /* a body of unknown length goes chunked; a 100 Continue is not passed on */
        fake_start(&f,
                   "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
                   "Content-Length: 2\r\n\r\nok",
                   "0\r\n\r\n");
        struct sbx_header te = {"Transfer-Encoding", "chunked"};
        call(f.port, "POST", "/up", NULL, &te, 1, "abcdef", 6, 4, &r);
        fake_stop(&f);
        CHECK_STREQ(f.got, "POST /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
                           "Connection: close\r\n\r\n4\r\nabcd\r\n2\r\nef\r\n0\r\n\r\n");
        CHECK_EQ_INT(r.status, 201);
        CHECK_STREQ(response_header(&r, "Content-Length"), "2");
        CHECK_STREQ((char *)r.body, "ok");
        response_done(&r);

        /* not HTTP: "not open", as E2B's proxy answers any broken upstream */
        fake_start(&f, "SSH-2.0-OpenSSH_9.2\r\n\r\n", "\r\n\r\n");
        call(f.port, "GET", "/", NULL, NULL, 0, NULL, 0, 1, &r);
        fake_stop(&f);
        CHECK_EQ_INT(r.status, 502);
        CHECK_STREQ(response_header(&r, SBX_HEADER_PORT_ERROR), SBX_PORT_ERROR_NOT_OPEN);
        response_done(&r);

        /* a server that closes before answering: the same */
        fake_start(&f, "", "\r\n\r\n");
        call(f.port, "GET", "/", NULL, NULL, 0, NULL, 0, 1, &r);
        fake_stop(&f);
        CHECK_EQ_INT(r.status, 502);
        response_done(&r);
}

int main(void)
{
        test_req_head();
        test_resp_head();
        test_chunked();
        test_ports();
        test_relay();
        return unit_finish("test-agent-port");
}
