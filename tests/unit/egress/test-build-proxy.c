/* SPDX-License-Identifier: Apache-2.0 */
/* The template builds' proxy (egress/serve/build-proxy.h): who may be reached, what a refusal
 * says, bounded heads. No network: the allowed hosts are never dialled here. */
#include <stdlib.h>
#include <string.h>
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

static void test_proxy(void)
{
        char dir[] = "/tmp/sbx-egress-test.XXXXXX", path[100], out[2048];
        CHECK(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/egress.sock", dir);
        char host[] = "mirror.invalid";
        char *allow[] = {host};
        struct build_egress *e = NULL;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CHECK(lfd >= 0 && bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
              listen(lfd, 8) == 0);
        CHECK_EQ_INT(build_egress_start(lfd, allow, 1, on_note, NULL, &e), 0);

        const char *r1 = "CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n";
        ask(path, r1, strlen(r1), out, sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 403 ", 13) == 0);
        CHECK(strstr(out, "pypi.org is not reachable from template builds") != NULL);
        CHECK(strstr(out, "(mirror.invalid)") != NULL);
        CHECK(strstr(notes, "pypi.org is not reachable") != NULL);

        /* an allowed host on another port, or CONNECT to port 80, is refused too */
        const char *r2 = "GET http://mirror.invalid:8080/x HTTP/1.1\r\nHost: a\r\n\r\n";
        ask(path, r2, strlen(r2), out, sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 403 ", 13) == 0);
        const char *r3 = "CONNECT mirror.invalid:80 HTTP/1.1\r\n\r\n";
        ask(path, r3, strlen(r3), out, sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 403 ", 13) == 0);

        /* an allowed host that does not resolve: 502 naming it */
        const char *r4 = "GET http://mirror.invalid/debian/Release HTTP/1.1\r\nHost: x\r\n\r\n";
        ask(path, r4, strlen(r4), out, sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 502 ", 13) == 0);
        CHECK(strstr(out, "the mirror mirror.invalid:80 cannot be reached") != NULL);

        /* a line break inside the target (a header smuggled into the mirror's request line) */
        const char *r6 = "GET http://mirror.invalid/\nProxy-Authorization: x HTTP/1.1\r\n\r\n";
        ask(path, r6, strlen(r6), out, sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 400 ", 13) == 0);

        /* not a proxy request */
        const char *r5 = "GET /relative HTTP/1.1\r\n\r\n";
        ask(path, r5, strlen(r5), out, sizeof(out));
        CHECK(strncmp(out, "HTTP/1.1 400 ", 13) == 0);

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

int main(void)
{
        test_proxy();
        return unit_finish("test-build-proxy");
}
