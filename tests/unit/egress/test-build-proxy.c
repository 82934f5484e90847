/* SPDX-License-Identifier: Apache-2.0 */
/* The template builds' proxy (egress/serve/build-proxy.h): who may be reached, what a refusal
 * says, bounded heads; and against a mirror of its own (in a network namespace of the test's,
 * "localhost" on ports 80 and 443): the mirror's own Host sent whatever the step sends, a Host
 * naming another site refused, nothing pipelined after a request forwarded, a body by its
 * Content-Length only, the response's "Connection: close", a TLS tunnel only for the mirror's
 * name. */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "policy/build-request.h"
#include "serve/build-proxy.h"
#include "unit.h"

static char notes[4096];

static void on_note(void *userdata, const char *msg)
{
        (void)userdata;
        strncat(notes, msg, sizeof(notes) - strlen(notes) - 1);
}

/* Send req to the proxy at path; the answer (at most size - 1 bytes) in out. */
static void ask(const char *path, const char *req, size_t len, char *out, size_t size)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        out[0] = 0;
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                CHECK(!"connect to the proxy");
                if (fd >= 0)
                        close(fd);
                return;
        }
        for (size_t o = 0; o < len;) {
                ssize_t k = write(fd, req + o, len - o);
                if (k <= 0)
                        break;
                o += (size_t)k;
        }
        size_t o = 0;
        ssize_t k;
        while (o < size - 1 && (k = read(fd, out + o, size - 1 - o)) > 0)
                o += (size_t)k;
        out[o] = 0;
        close(fd);
}

/* Send the string req to the proxy at path; the answer in out (of size). */
static void ask_str(const char *path, const char *req, char *out, size_t size)
{
        ask(path, req, strlen(req), out, size);
}

/* A proxy for the one host, on a socket in the directory made from the template dir; the
 * socket's path in path (of size). */
static struct build_egress *proxy_start(char *dir, char *path, size_t size, const char *host)
{
        char *allow[] = {(char *)host};
        struct build_egress *e = NULL;
        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, size, "%s/egress.sock", dir);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
              listen(lfd, 8) == 0);
        CHECK_EQ_INT(build_egress_start(lfd, allow, 1, on_note, NULL, &e), 0);
        return e;
}

static void test_proxy(void)
{
        char dir[] = "/tmp/sbx-egress-test.XXXXXX", path[100], out[2048];
        struct build_egress *e = proxy_start(dir, path, sizeof(path), "mirror.invalid");

        ask_str(path, "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", out,
                sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 403 ", 13) == 0);
        CHECK(strstr(out, "pypi.org is not reachable from template builds") != NULL);
        CHECK(strstr(out, "(mirror.invalid)") != NULL);
        CHECK(strstr(notes, "pypi.org is not reachable") != NULL);

        /* refused by their status alone */
        static const struct {
                const char *why, *req, *status;
        } refused[] = {
            {"an allowed host on another port",
             "GET http://mirror.invalid:8080/x HTTP/1.1\r\nHost: a\r\n\r\n", "HTTP/1.1 403 "},
            {"CONNECT to port 80", "CONNECT mirror.invalid:80 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 "},
            {"a line break inside the target (a header smuggled into the mirror's request line)",
             "GET http://mirror.invalid/\nProxy-Authorization: x HTTP/1.1\r\n\r\n",
             "HTTP/1.1 400 "},
            {"not a proxy request", "GET /relative HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "},
        };
        for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
                unit_case = refused[i].why;
                ask_str(path, refused[i].req, out, sizeof(out));
                CHECK(strncmp(out, refused[i].status, 13) == 0);
        }
        unit_case = NULL;

        /* an allowed host that does not resolve: 502 naming it */
        ask_str(path,
                "GET http://mirror.invalid/debian/Release HTTP/1.1\r\nHost: mirror.invalid\r\n\r\n",
                out, sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 502 ", 13) == 0);
        CHECK(strstr(out, "the mirror mirror.invalid:80 cannot be reached") != NULL);

        /* a head past BUILD_REQUEST_HEAD_MAX */
        size_t big = BUILD_REQUEST_HEAD_MAX + 100;
        char *huge = malloc(big);
        memcpy(huge, "GET http://mirror.invalid/ HTTP/1.1\r\nX: ", 40);
        memset(huge + 40, 'a', big - 40);
        ask(path, huge, big, out, sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 431 ", 13) == 0);
        free(huge);

        build_egress_stop(e);
        unlink(path);
        rmdir(dir);
}

/* ---- a mirror of the test's own ---- */

static char got80[8192], got443[8192]; /* what the mirror received, all of it */
static int mirror80, mirror443;

static void *mirror_main(void *arg)
{
        int lfd = (int)(intptr_t)arg;
        char *got = lfd == mirror80 ? got80 : got443;
        for (int c; (c = accept(lfd, NULL, NULL)) >= 0; close(c)) {
                size_t o = strlen(got);
                struct timeval tv = {.tv_sec = 0, .tv_usec = 300000};
                setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
                ssize_t k;
                while (o < 8191 && (k = read(c, got + o, 8191 - o)) > 0) {
                        o += (size_t)k;
                        got[o] = 0;
                        if (lfd == mirror80 && strstr(got, "\r\n\r\n"))
                                break;
                }
                if (lfd == mirror80) {  /* a kept-alive answer: the proxy must close it */
                        usleep(100000); /* what the proxy sends after the head is here too */
                        while (o < 8191 && (k = recv(c, got + o, 8191 - o, MSG_DONTWAIT)) > 0)
                                got[o += (size_t)k] = 0;
                        const char a[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: "
                                         "keep-alive\r\nKeep-Alive: timeout=5\r\n\r\nok";
                        (void)!write(c, a, sizeof(a) - 1);
                }
        }
        return NULL;
}

static int listen_local(int port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(fd, 16) == 0);
        return fd;
}

/* A TLS record holding a ClientHello that asks for name (enough for the proxy to read it). */
static size_t client_hello(const char *name, unsigned char *out)
{
        size_t nl = strlen(name), o = 0;
        unsigned char body[512];
        size_t b = 0;
        body[b++] = 3, body[b++] = 3;                                  /* client version */
        memset(body + b, 7, 32), b += 32;                              /* random */
        body[b++] = 0;                                                 /* session id */
        body[b++] = 0, body[b++] = 2, body[b++] = 0x13, body[b++] = 1; /* one cipher suite */
        body[b++] = 1, body[b++] = 0;                                  /* compression: null */
        size_t ext = 2 + 2 + 2 + 1 + 2 + nl;                           /* server_name */
        body[b++] = (unsigned char)(ext >> 8), body[b++] = (unsigned char)ext;
        body[b++] = 0, body[b++] = 0; /* type server_name */
        body[b++] = (unsigned char)((nl + 5) >> 8), body[b++] = (unsigned char)(nl + 5);
        body[b++] = (unsigned char)((nl + 3) >> 8), body[b++] = (unsigned char)(nl + 3);
        body[b++] = 0; /* host_name */
        body[b++] = (unsigned char)(nl >> 8), body[b++] = (unsigned char)nl;
        memcpy(body + b, name, nl), b += nl;
        out[o++] = 22, out[o++] = 3, out[o++] = 1; /* handshake record */
        out[o++] = (unsigned char)((b + 4) >> 8), out[o++] = (unsigned char)(b + 4);
        out[o++] = 1, out[o++] = 0; /* ClientHello, 24-bit length */
        out[o++] = (unsigned char)(b >> 8), out[o++] = (unsigned char)b;
        memcpy(out + o, body, b);
        return o + b;
}

static void test_mirror(void)
{
        /* a network namespace of the test's own: its loopback, its ports 80 and 443 */
        CHECK(unshare(CLONE_NEWNET) == 0);
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq ifr = {.ifr_name = "lo"};
        CHECK(ioctl(s, SIOCGIFFLAGS, &ifr) == 0);
        ifr.ifr_flags |= IFF_UP;
        CHECK(ioctl(s, SIOCSIFFLAGS, &ifr) == 0);
        close(s);
        mirror80 = listen_local(80);
        mirror443 = listen_local(443);
        pthread_t t;
        pthread_create(&t, NULL, mirror_main, (void *)(intptr_t)mirror80);
        pthread_detach(t);
        pthread_create(&t, NULL, mirror_main, (void *)(intptr_t)mirror443);
        pthread_detach(t);

        char dir[] = "/tmp/sbx-egress-mirror.XXXXXX", path[100], out[4096];
        struct build_egress *e = proxy_start(dir, path, sizeof(path), "localhost");
        notes[0] = 0;

        /* the mirror's own name goes as Host (a step's own Host, if any, must be that name) */
        ask_str(path,
                "GET http://localhost/dists/InRelease HTTP/1.1\r\nUser-Agent: apt\r\n"
                "Proxy-Connection: Keep-Alive\r\n\r\n",
                out, sizeof(out));
        CHECK_STREQ(got80, "GET /dists/InRelease HTTP/1.1\r\nHost: localhost\r\nUser-Agent: apt\r\n"
                           "Connection: close\r\n\r\n");
        CHECK_STREQ(out, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");

        /* a Host naming another site: refused, nothing reaches the mirror, the log says why */
        got80[0] = 0;
        ask_str(path, "GET http://localhost/x HTTP/1.1\r\nHost: evil.example\r\n\r\n", out,
                sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 403 ", 13) == 0);
        CHECK(strstr(notes, "names another host (evil.example) in its Host header") != NULL);
        CHECK_STREQ(got80, "");

        /* pipelined after a request: never forwarded; what the proxy would refuse is logged */
        notes[0] = 0;
        ask_str(path,
                "GET http://localhost/a HTTP/1.1\r\nHost: LOCALHOST:80\r\n\r\n"
                "GET http://localhost/b HTTP/1.1\r\nHost: evil.example\r\n\r\n"
                "GET http://pypi.org/simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n",
                out, sizeof(out));
        CHECK_STREQ(got80, "GET /a HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        CHECK(strstr(notes, "pipelined on one connection, for localhost (Host evil.example)") !=
              NULL);
        CHECK(strstr(notes, "pipelined on one connection, for pypi.org") != NULL);

        /* a body by its Content-Length, and nothing after it */
        got80[0] = 0;
        ask_str(path,
                "POST http://localhost/p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello"
                "GET http://localhost/z HTTP/1.1\r\n\r\n",
                out, sizeof(out));
        CHECK_STREQ(got80, "POST /p HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n"
                           "Connection: close\r\n\r\nhello");
        ask_str(path,
                "POST http://localhost/p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                "5\r\nhello\r\n0\r\n\r\n",
                out, sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 501 ", 13) == 0);

        /* CONNECT: the tunnel only for TLS that asks for the mirror's name */
        unsigned char req[1024];
        const char *c = "CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n";
        size_t cl = strlen(c);
        memcpy(req, c, cl);
        size_t n = cl + client_hello("evil.example", req + cl);
        ask(path, (const char *)req, n, out, sizeof(out));
        CHECK(strstr(notes, "CONNECT localhost:443 asks for evil.example: refused") != NULL);
        usleep(400000);
        CHECK_STREQ(got443, "");
        n = cl + client_hello("localhost", req + cl);
        ask(path, (const char *)req, n, out, sizeof(out));
        usleep(400000);
        CHECK(strlen(got443) > 0 && got443[0] == 22); /* the ClientHello, on to the mirror */

        build_egress_stop(e);
        unlink(path);
        rmdir(dir);
}

int main(void)
{
        test_proxy();
        test_mirror();
        return unit_finish("test-build-proxy");
}
