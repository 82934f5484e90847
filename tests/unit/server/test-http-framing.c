/* SPDX-License-Identifier: Apache-2.0 */
/* The framing rules of a request head (http/framing.h): where a head ends, CL + TE, unknown
 * transfer codings, malformed request lines and headers. */
#include <string.h>

#include "http/framing.h"
#include "unit.h"

static unsigned check(const char *head)
{
        const char *msg = NULL;
        size_t hl = http_head_length(head, strlen(head));
        CHECK(hl == strlen(head));
        unsigned st = http_framing_check_head(head, hl, &msg);
        CHECK(st == 0 || (msg && *msg));
        return st;
}

static void test_head_length(void)
{
        const char *h = "GET / HTTP/1.1\r\nHost: x\r\n\r\nBODY";
        CHECK_EQ_INT(http_head_length(h, strlen(h)), strlen(h) - 4);
        CHECK_EQ_INT(http_head_length("GET / HTTP/1.1\r\nHost: x\r\n", 25), 0);
        CHECK_EQ_INT(http_head_length("GET / HTTP/1.1\r\nHost: x\r\n\r", 26), 0);
        CHECK_EQ_INT(http_head_length("GET / HTTP/1.1\nHost: x\n\n", 24), 24);
        /* empty lines before the request line do not end a head */
        CHECK_EQ_INT(http_head_length("\r\n\r\n", 4), 0);
        CHECK_EQ_INT(http_head_length("\r\nGET / HTTP/1.1\r\n\r\n", 20), 20);
        CHECK_EQ_INT(http_head_length("", 0), 0);
}

static void test_framing(void)
{
        CHECK_EQ_INT(check("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), 0);
        CHECK_EQ_INT(check("POST /sandboxes HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n"), 0);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"), 0);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\ntransfer-encoding:  Chunked \r\n\r\n"), 0);
        CHECK_EQ_INT(check("\r\nGET / HTTP/1.0\r\n\r\n"), 0);
        /* RFC 9112 6.3: both → 400 */
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: "
                           "chunked\r\n\r\n"),
                     400);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\ncontent-length: "
                           "0\r\n\r\n"),
                     400);
        /* codings sbxd does not decode → 501 */
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"), 501);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
                           "chunked\r\n\r\n"),
                     501);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n"), 501);
        /* Content-Length: digits, one value */
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"), 0);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
                     400);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"), 400);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nContent-Length: 1,1\r\n\r\n"), 400);
        CHECK_EQ_INT(check("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"), 400);
        /* the request line and header lines */
        CHECK_EQ_INT(check("GARBAGE\r\n\r\n"), 400);
        CHECK_EQ_INT(check("GET /\r\n\r\n"), 400);
        CHECK_EQ_INT(check("GET  / HTTP/1.1\r\n\r\n"), 400);
        CHECK_EQ_INT(check("GET / HTTP/2.0\r\n\r\n"), 400);
        CHECK_EQ_INT(check("G(T / HTTP/1.1\r\n\r\n"), 400);
        CHECK_EQ_INT(check("GET / HTTP/1.1\r\nNoColon\r\n\r\n"), 400);
        CHECK_EQ_INT(check("GET / HTTP/1.1\r\nBad Name: x\r\n\r\n"), 400);
        CHECK_EQ_INT(check("GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n"), 400);
        const char nul[] = "GET / HTTP/1.1\r\nA: b\0c\r\n\r\n";
        const char *msg = NULL;
        CHECK_EQ_INT(http_framing_check_head(nul, sizeof(nul) - 1, &msg), 400);
}

/* The same rules on headers fed one by one (front.c, libmicrohttpd's parsed headers). */
static void test_fed(void)
{
        struct http_framing f = {};
        http_framing_header(&f, "Content-Length", 14, "10", 2);
        CHECK_EQ_INT(http_framing_verdict(&f), 0);
        CHECK(f.has_cl && f.cl == 10);
        http_framing_header(&f, "Transfer-Encoding", 17, "chunked", 7);
        CHECK_EQ_INT(http_framing_verdict(&f), 400);
        struct http_framing g = {};
        http_framing_header(&g, "TRANSFER-ENCODING", 17, "deflate", 7);
        CHECK_EQ_INT(http_framing_verdict(&g), 501);
}

int main(void)
{
        test_head_length();
        test_framing();
        test_fed();
        return unit_finish("test-http-framing");
}
