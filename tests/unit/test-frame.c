/* SPDX-License-Identifier: Apache-2.0 */
/* Agent-channel frame codec: header bounds, head round trips, malformed heads, blocking I/O. */
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "unit.h"

static void test_header_bounds(void)
{
        uint8_t h[SBX_FRAME_HEADER_SIZE], type;
        uint32_t len;

        sbx_frame_header_encode(h, SBX_FRAME_DATA, 1234);
        CHECK_EQ_INT(sbx_frame_header_parse(h, &type, &len), 0);
        CHECK_EQ_INT(type, SBX_FRAME_DATA);
        CHECK_EQ_INT(len, 1234);

        sbx_frame_header_encode(h, SBX_FRAME_DATA, SBX_FRAME_MAX_PAYLOAD);
        CHECK_EQ_INT(sbx_frame_header_parse(h, &type, &len), 0);
        sbx_frame_header_encode(h, SBX_FRAME_DATA, SBX_FRAME_MAX_PAYLOAD + 1);
        CHECK_EQ_INT(sbx_frame_header_parse(h, &type, &len), -EMSGSIZE);
        sbx_frame_header_encode(h, SBX_FRAME_REQ_HEAD, SBX_FRAME_MAX_HEAD + 1);
        CHECK_EQ_INT(sbx_frame_header_parse(h, &type, &len), -EMSGSIZE);
        sbx_frame_header_encode(h, SBX_FRAME_END, 1);
        CHECK_EQ_INT(sbx_frame_header_parse(h, &type, &len), -EMSGSIZE);
        sbx_frame_header_encode(h, 0, 0);
        CHECK_EQ_INT(sbx_frame_header_parse(h, &type, &len), -EPROTO);
        sbx_frame_header_encode(h, 9, 0);
        CHECK_EQ_INT(sbx_frame_header_parse(h, &type, &len), -EPROTO);
        /* 0xffffffff must not wrap into a small length. */
        uint8_t big[5] = {0xff, 0xff, 0xff, 0xff, SBX_FRAME_DATA};
        CHECK_EQ_INT(sbx_frame_header_parse(big, &type, &len), -EMSGSIZE);
}

static void test_req_head_roundtrip(void)
{
        struct sbx_header hs[] = {{"Content-Type", "application/connect+json"},
                                  {"Connect-Timeout-Ms", "500"}};
        struct sbx_req_head in = {.port = SBX_PORT_ENVD,
                                  .method = "POST",
                                  .path = "/process.Process/Start",
                                  .query = "a=1&path=%2Fhome",
                                  .n_headers = 2,
                                  .headers = hs};
        uint8_t *buf = NULL;
        size_t len = 0;
        CHECK_EQ_INT(sbx_req_head_encode(&in, &buf, &len), 0);

        struct sbx_req_head out;
        CHECK_EQ_INT(sbx_req_head_decode(buf, len, &out), 0);
        CHECK_EQ_INT(out.port, SBX_PORT_ENVD);
        CHECK_STREQ(out.method, "POST");
        CHECK_STREQ(out.path, "/process.Process/Start");
        CHECK_STREQ(out.query, "a=1&path=%2Fhome");
        CHECK_EQ_INT(out.n_headers, 2);
        CHECK_STREQ(sbx_header_get(out.headers, out.n_headers, "connect-timeout-ms"), "500");
        CHECK(sbx_header_get(out.headers, out.n_headers, "X-Missing") == NULL);
        sbx_req_head_free(&out);

        /* Every truncation of a valid head is rejected, never read past the end. */
        for (size_t cut = 0; cut < len; cut++) {
                uint8_t *t = malloc(cut ? cut : 1);
                memcpy(t, buf, cut);
                CHECK(sbx_req_head_decode(t, cut, &out) < 0);
                CHECK(out.method == NULL && out.headers == NULL);
                free(t);
        }
        /* Trailing garbage is rejected too. */
        uint8_t *longer = malloc(len + 1);
        memcpy(longer, buf, len);
        longer[len] = 0x42;
        CHECK_EQ_INT(sbx_req_head_decode(longer, len + 1, &out), -EBADMSG);
        free(longer);
        free(buf);
}

static void test_req_head_invalid(void)
{
        struct sbx_req_head out;
        uint8_t *buf = NULL;
        size_t len = 0;

        /* Path must start with '/'. */
        struct sbx_req_head rel = {.port = 0, .method = "GET", .path = "health", .query = ""};
        CHECK_EQ_INT(sbx_req_head_encode(&rel, &buf, &len), 0);
        CHECK_EQ_INT(sbx_req_head_decode(buf, len, &out), -EBADMSG);
        free(buf);

        /* An embedded NUL in a string is rejected: method "G\0T". */
        uint8_t nul[] = {0, 0, 0, 3, 'G', 0, 'T', 0, 1, '/', 0, 0, 0, 0};
        CHECK_EQ_INT(sbx_req_head_decode(nul, sizeof(nul), &out), -EBADMSG);

        /* Too many headers. */
        size_t n = SBX_HEAD_MAX_HEADERS + 1;
        struct sbx_header *hs = calloc(n, sizeof(*hs));
        for (size_t i = 0; i < n; i++)
                hs[i] = (struct sbx_header){"a", "b"};
        struct sbx_req_head many = {
            .method = "GET", .path = "/", .query = "", .n_headers = n, .headers = hs};
        CHECK_EQ_INT(sbx_req_head_encode(&many, &buf, &len), -E2BIG);
        free(hs);

        /* A string over the bound cannot be encoded. */
        char *huge = malloc(SBX_HEAD_MAX_STRING + 2);
        memset(huge, 'x', SBX_HEAD_MAX_STRING + 1);
        huge[SBX_HEAD_MAX_STRING + 1] = 0;
        struct sbx_req_head big = {.method = "GET", .path = "/", .query = huge};
        CHECK_EQ_INT(sbx_req_head_encode(&big, &buf, &len), -EMSGSIZE);
        free(huge);
}

static void test_resp_head(void)
{
        struct sbx_header hs[] = {{"Content-Type", "application/json"}};
        struct sbx_resp_head in = {.status = 201, .n_headers = 1, .headers = hs};
        uint8_t *buf = NULL;
        size_t len = 0;
        CHECK_EQ_INT(sbx_resp_head_encode(&in, &buf, &len), 0);
        struct sbx_resp_head out;
        CHECK_EQ_INT(sbx_resp_head_decode(buf, len, &out), 0);
        CHECK_EQ_INT(out.status, 201);
        CHECK_STREQ(sbx_header_get(out.headers, out.n_headers, "content-type"), "application/json");
        sbx_resp_head_free(&out);
        free(buf);

        struct sbx_resp_head bad = {.status = 99};
        CHECK_EQ_INT(sbx_resp_head_encode(&bad, &buf, &len), -EINVAL);
        uint8_t st600[] = {0x02, 0x58, 0, 0};
        CHECK_EQ_INT(sbx_resp_head_decode(st600, sizeof(st600), &out), -EBADMSG);
}

static void test_io(void)
{
        int sv[2];
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        static uint8_t payload[SBX_FRAME_MAX_PAYLOAD];
        for (size_t i = 0; i < sizeof(payload); i++)
                payload[i] = (uint8_t)(i * 7);

        /* A writer thread is not needed: the socket buffer holds a small frame. */
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_DATA, "hello", 5), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_END, NULL, 0), 0);
        static uint8_t buf[SBX_FRAME_MAX_PAYLOAD];
        uint8_t type;
        uint32_t len;
        CHECK_EQ_INT(sbx_frame_read(sv[1], &type, buf, &len), 0);
        CHECK_EQ_INT(type, SBX_FRAME_DATA);
        CHECK_EQ_INT(len, 5);
        CHECK(memcmp(buf, "hello", 5) == 0);
        CHECK_EQ_INT(sbx_frame_read(sv[1], &type, buf, &len), 0);
        CHECK_EQ_INT(type, SBX_FRAME_END);

        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_DATA, payload, sizeof(payload) + 1),
                     -EMSGSIZE);

        /* A large frame goes through a child writer and arrives intact. */
        pid_t pid = fork();
        if (pid == 0) {
                close(sv[1]);
                _exit(sbx_frame_write(sv[0], SBX_FRAME_DATA, payload, sizeof(payload)) == 0 ? 0
                                                                                            : 1);
        }
        CHECK_EQ_INT(sbx_frame_read(sv[1], &type, buf, &len), 0);
        CHECK_EQ_INT(len, sizeof(payload));
        CHECK(memcmp(buf, payload, sizeof(payload)) == 0);

        /* Clean EOF at a frame boundary vs. EOF inside a frame. */
        close(sv[0]);
        CHECK_EQ_INT(sbx_frame_read(sv[1], &type, buf, &len), -EPIPE);
        close(sv[1]);

        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        uint8_t partial[] = {0, 0, 0, 10, SBX_FRAME_DATA, 'a', 'b'};
        CHECK_EQ_INT(write(sv[0], partial, sizeof(partial)), (long)sizeof(partial));
        close(sv[0]);
        CHECK_EQ_INT(sbx_frame_read(sv[1], &type, buf, &len), -EPROTO);
        close(sv[1]);
}

static void test_read_body(void)
{
        int sv[2];
        static uint8_t buf[SBX_FRAME_MAX_PAYLOAD];
        uint32_t len = 0;
        CHECK_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_DATA, "abc", 3), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_DATA, NULL, 0), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_END, NULL, 0), 0);
        CHECK_EQ_INT(sbx_frame_write(sv[0], SBX_FRAME_RESP_HEAD, "x", 1), 0);
        CHECK_EQ_INT(sbx_frame_read_body(sv[1], buf, &len), 1);
        CHECK_EQ_INT(len, 3);
        CHECK(memcmp(buf, "abc", 3) == 0);
        CHECK_EQ_INT(sbx_frame_read_body(sv[1], buf, &len), 1); /* an empty DATA frame */
        CHECK_EQ_INT(len, 0);
        CHECK_EQ_INT(sbx_frame_read_body(sv[1], buf, &len), 0);       /* END */
        CHECK_EQ_INT(sbx_frame_read_body(sv[1], buf, &len), -EPROTO); /* not a body frame */
        close(sv[0]);
        CHECK_EQ_INT(sbx_frame_read_body(sv[1], buf, &len), -EPIPE);
        close(sv[1]);
}

int main(void)
{
        test_header_bounds();
        test_req_head_roundtrip();
        test_req_head_invalid();
        test_resp_head();
        test_io();
        test_read_body();
        return unit_finish("test-frame");
}
