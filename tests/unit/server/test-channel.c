/* SPDX-License-Identifier: Apache-2.0 */
/* The agent-channel client API (channel/agent-req.h) against a fake agent on a socketpair:
 * the head goes out as one REQ_HEAD, a body is cut into DATA frames at SBX_FRAME_MAX_PAYLOAD,
 * sending stops once the answer is waiting, the answer's head round-trips, bodies are read up
 * to END and never past their bound. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel/agent-req.h"
#include "frame.h"
#include "unit.h"

/* The fake agent's side: every frame it read, until END. */
struct peer {
        int fd;
        uint8_t *buf;
        struct sbx_req_head head;
        int head_ok;
        uint32_t sizes[16];
        size_t n_data, total;
        bool got_end;
};

static void *peer_read(void *arg)
{
        struct peer *p = arg;
        uint8_t type;
        uint32_t len;
        if (sbx_frame_read(p->fd, &type, p->buf, &len) < 0 || type != SBX_FRAME_REQ_HEAD)
                return NULL;
        p->head_ok = sbx_req_head_decode(p->buf, len, &p->head) == 0;
        while (sbx_frame_read(p->fd, &type, p->buf, &len) == 0) {
                if (type == SBX_FRAME_END) {
                        p->got_end = true;
                        break;
                }
                if (type != SBX_FRAME_DATA)
                        break;
                if (p->n_data < 16)
                        p->sizes[p->n_data] = len;
                p->n_data++;
                p->total += len;
        }
        return NULL;
}

static void open_pair(struct agent_req **q, int *peer_fd, const struct agent_req_opts *o)
{
        int sv[2];
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        struct agent_head h;
        agent_head_init(&h, SBX_PORT_INTERNAL, "POST", "/v1/exec", "a=1&b=%2F", "application/json");
        CHECK_EQ_INT(agent_req_open_fd(sv[0], &h.h, o, q), 0);
        *peer_fd = sv[1];
}

static void test_body_frames(void)
{
        struct agent_req_opts o = {.timeout_ms = 5000};
        struct agent_req *q = NULL;
        struct peer p = {.buf = malloc(SBX_FRAME_MAX_PAYLOAD)};
        open_pair(&q, &p.fd, &o);
        pthread_t t;
        pthread_create(&t, NULL, peer_read, &p);
        size_t n = 2 * SBX_FRAME_MAX_PAYLOAD + 1000;
        char *body = malloc(n);
        memset(body, 'x', n);
        CHECK_EQ_INT(agent_req_send(q, body, n), 0);
        CHECK_EQ_INT(agent_req_send(q, "", 0), 0); /* nothing: no empty DATA frame */
        CHECK_EQ_INT(agent_req_end(q), 0);
        pthread_join(t, NULL);
        /* the head round trip */
        CHECK(p.head_ok);
        CHECK_EQ_INT(p.head.port, SBX_PORT_INTERNAL);
        CHECK_STREQ(p.head.method, "POST");
        CHECK_STREQ(p.head.path, "/v1/exec");
        CHECK_STREQ(p.head.query, "a=1&b=%2F");
        CHECK_EQ_INT(p.head.n_headers, 1);
        CHECK_STREQ(sbx_header_get(p.head.headers, p.head.n_headers, "content-type"),
                    "application/json");
        /* cut at the bound */
        CHECK_EQ_INT(p.n_data, 3);
        CHECK_EQ_INT(p.sizes[0], SBX_FRAME_MAX_PAYLOAD);
        CHECK_EQ_INT(p.sizes[1], SBX_FRAME_MAX_PAYLOAD);
        CHECK_EQ_INT(p.sizes[2], 1000);
        CHECK_EQ_INT(p.total, n);
        CHECK(p.got_end);
        sbx_req_head_free(&p.head);
        agent_req_free(q);
        close(p.fd);
        free(p.buf);
        free(body);
}

static void write_answer(int fd, int status, const char *cl, const char *const *chunks)
{
        struct sbx_header hdr[2] = {{"Content-Type", "text/plain"}, {"Content-Length", cl}};
        struct sbx_resp_head h = {.status = status, .n_headers = cl ? 2 : 1, .headers = hdr};
        uint8_t *buf;
        size_t len;
        CHECK_EQ_INT(sbx_resp_head_encode(&h, &buf, &len), 0);
        CHECK_EQ_INT(sbx_frame_write(fd, SBX_FRAME_RESP_HEAD, buf, len), 0);
        free(buf);
        for (; chunks && *chunks; chunks++)
                CHECK_EQ_INT(sbx_frame_write(fd, SBX_FRAME_DATA, *chunks, strlen(*chunks)), 0);
        CHECK_EQ_INT(sbx_frame_write(fd, SBX_FRAME_END, NULL, 0), 0);
}

static void test_answer(void)
{
        struct agent_req_opts o = {.timeout_ms = 5000};
        struct agent_req *q = NULL;
        int peer;
        open_pair(&q, &peer, &o);
        static const char *const chunks[] = {"hello ", "world", NULL};
        write_answer(peer, 201, "11", chunks);
        struct sbx_resp_head h = {};
        CHECK_EQ_INT(agent_req_read_head(q, &h), 0);
        CHECK_EQ_INT(h.status, 201);
        CHECK_STREQ(sbx_header_get(h.headers, h.n_headers, "Content-Type"), "text/plain");
        uint64_t cl;
        CHECK_EQ_INT(agent_resp_content_length(&h, &cl), 0);
        CHECK_EQ_INT(cl, 11);
        sbx_resp_head_free(&h);
        struct buf b = {};
        CHECK_EQ_INT(agent_req_read_body(q, 11, &b), 0);
        CHECK_STREQ(buf_str(&b), "hello world");
        buf_done(&b);
        agent_req_free(q);
        close(peer);

        /* bounded: one byte less than the body is refused */
        open_pair(&q, &peer, &o);
        write_answer(peer, 200, NULL, chunks);
        CHECK_EQ_INT(agent_req_read_head(q, &h), 0);
        CHECK_EQ_INT(agent_resp_content_length(&h, &cl), 0);
        CHECK(cl == UINT64_MAX); /* none: chunked */
        sbx_resp_head_free(&h);
        CHECK_EQ_INT(agent_req_read_body(q, 10, &b), -EMSGSIZE);
        buf_done(&b);
        agent_req_free(q);
        close(peer);

        /* frame by frame, then END */
        open_pair(&q, &peer, &o);
        write_answer(peer, 200, NULL, chunks);
        const uint8_t *d;
        uint32_t n;
        CHECK_EQ_INT(agent_req_read_head(q, &h), 0);
        sbx_resp_head_free(&h);
        CHECK_EQ_INT(agent_req_next(q, &d, &n), 1);
        CHECK_EQ_INT(n, 6);
        CHECK(memcmp(d, "hello ", 6) == 0);
        CHECK_EQ_INT(agent_req_next(q, &d, &n), 1);
        CHECK_EQ_INT(agent_req_next(q, &d, &n), 0);
        agent_req_free(q);
        close(peer);

        /* a DATA frame where the head should be; an answer cut short */
        open_pair(&q, &peer, &o);
        CHECK_EQ_INT(sbx_frame_write(peer, SBX_FRAME_DATA, "x", 1), 0);
        CHECK_EQ_INT(agent_req_read_head(q, &h), -EPROTO);
        agent_req_free(q);
        close(peer);
        open_pair(&q, &peer, &o);
        write_answer(peer, 200, NULL, NULL);
        close(peer);
        CHECK_EQ_INT(agent_req_read_head(q, &h), 0);
        sbx_resp_head_free(&h);
        CHECK_EQ_INT(agent_req_drain(q), 0);
        CHECK(agent_req_next(q, &d, &n) < 0); /* nothing after END: the peer is gone */
        agent_req_free(q);
}

static void test_early_answer(void)
{
        /* The agent refuses before reading the body: sending stops instead of blocking, and
         * the answer is still read. */
        struct agent_req_opts o = {.timeout_ms = 5000};
        struct agent_req *q = NULL;
        int peer;
        open_pair(&q, &peer, &o);
        write_answer(peer, 413, NULL, NULL);
        char chunk[1024] = {0};
        CHECK_EQ_INT(agent_req_send(q, chunk, sizeof(chunk)), -ECANCELED);
        CHECK(agent_req_send_stopped(q));
        CHECK_EQ_INT(agent_req_send(q, chunk, sizeof(chunk)), -ECANCELED);
        CHECK_EQ_INT(agent_req_end(q), -ECANCELED);
        struct sbx_resp_head h = {};
        CHECK_EQ_INT(agent_req_read_head(q, &h), 0);
        CHECK_EQ_INT(h.status, 413);
        sbx_resp_head_free(&h);
        agent_req_free(q);
        close(peer);
}

static void test_cancel_and_deadline(void)
{
        struct agent_req_opts o = {.timeout_ms = 5000};
        struct agent_req *q = NULL;
        struct sbx_resp_head h = {};
        int peer;
        atomic_bool cancel = true;
        open_pair(&q, &peer, &o);
        agent_req_watch_cancel(q, &cancel, 0);
        CHECK_EQ_INT(agent_req_read_head(q, &h), -ECANCELED);
        agent_req_watch_cancel(q, NULL, 1); /* a deadline long past */
        CHECK_EQ_INT(agent_req_read_head(q, &h), -ETIMEDOUT);
        agent_req_free(q);
        close(peer);
}

static void test_content_length(void)
{
        static const char *const bad[] = {"", "-1", "12x", "18446744073709551615",
                                          "99999999999999999999999"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct sbx_header hdr = {"Content-Length", bad[i]};
                struct sbx_resp_head h = {.status = 200, .n_headers = 1, .headers = &hdr};
                uint64_t cl;
                CHECK_EQ_INT(agent_resp_content_length(&h, &cl), -EPROTO);
        }
}

int main(void)
{
        test_body_frames();
        test_answer();
        test_early_answer();
        test_cancel_and_deadline();
        test_content_length();
        return unit_finish("test-channel");
}
