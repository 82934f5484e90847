/* SPDX-License-Identifier: Apache-2.0 */
/* Query strings, percent-decoding, Basic auth and media-type parameters. */
#include <errno.h>
#include <stdlib.h>

#include "core/http.h"
#include "unit.h"
#include "url-util.h"

static void test_query(void)
{
        char *v = NULL;

        CHECK_EQ_INT(http_query_get("path=%2Fhome%2Fuser%2Fa.txt&username=root", "path", &v), 1);
        CHECK_STREQ(v, "/home/user/a.txt");
        free(v);
        CHECK_EQ_INT(http_query_get("path=%2Fhome%2Fuser%2Fa.txt&username=root", "username", &v),
                     1);
        CHECK_STREQ(v, "root");
        free(v);
        CHECK_EQ_INT(http_query_get("a=1&b=2", "c", &v), 0);
        CHECK_EQ_INT(http_query_get("", "c", &v), 0);
        CHECK_EQ_INT(http_query_get(NULL, "c", &v), 0);
        CHECK_EQ_INT(http_query_get("flag&x=1", "flag", &v), 1);
        CHECK_STREQ(v, "");
        free(v);
        CHECK_EQ_INT(http_query_get("x=a+b%20c&x=second", "x", &v), 1);
        CHECK_STREQ(v, "a b c");
        free(v);
        CHECK_EQ_INT(http_query_get("p%61th=ok", "path", &v), 1);
        CHECK_STREQ(v, "ok");
        free(v);
        CHECK_EQ_INT(http_query_get("path=%2", "path", &v), -EINVAL);
        CHECK_EQ_INT(http_query_get("path=%zz", "path", &v), -EINVAL);
        CHECK_EQ_INT(http_query_get("path=a%00b", "path", &v), -EINVAL);
        CHECK_EQ_INT(http_query_get("&&path=x&&", "path", &v), 1);
        CHECK_STREQ(v, "x");
        free(v);
        CHECK_EQ_INT(url_percent_decode("%e2%9C%93", 9, &v), 0);
        CHECK_STREQ(v, "\xe2\x9c\x93");
        free(v);
}

static void test_basic_auth(void)
{
        char *u = NULL;

        CHECK_EQ_INT(http_basic_auth_user("Basic cm9vdDo=", &u), 1); /* "root:" */
        CHECK_STREQ(u, "root");
        free(u);
        CHECK_EQ_INT(http_basic_auth_user("basic   dXNlcjpwYXNz  ", &u), 1); /* "user:pass" */
        CHECK_STREQ(u, "user");
        free(u);
        CHECK_EQ_INT(http_basic_auth_user("Basic Og==", &u), 1); /* ":" */
        CHECK_STREQ(u, "");
        free(u);
        CHECK_EQ_INT(http_basic_auth_user("Bearer abc", &u), 0);
        CHECK_EQ_INT(http_basic_auth_user(NULL, &u), 0);
        CHECK_EQ_INT(http_basic_auth_user("Basicxyz", &u), 0);
        CHECK_EQ_INT(http_basic_auth_user("Basic cm9vdA==", &u), -EINVAL); /* no ':' */
        CHECK_EQ_INT(http_basic_auth_user("Basic !!!!", &u), -EINVAL);
        CHECK_EQ_INT(http_basic_auth_user("Basic ", &u), -EINVAL);
        CHECK_EQ_INT(http_basic_auth_user("Basic AGE6", &u), -EINVAL); /* "\0a:" */
}

static void test_media(void)
{
        char *v = NULL;

        CHECK_EQ_INT(http_media_type(" Multipart/Form-Data ; boundary=x", &v), 0);
        CHECK_STREQ(v, "multipart/form-data");
        free(v);
        CHECK_EQ_INT(http_media_type(NULL, &v), 0);
        CHECK_STREQ(v, "");
        free(v);
        CHECK_EQ_INT(http_header_param("multipart/form-data; boundary=----formdata-undici-0123",
                                       "boundary", &v),
                     1);
        CHECK_STREQ(v, "----formdata-undici-0123");
        free(v);
        CHECK_EQ_INT(http_header_param("multipart/form-data; charset=x; BOUNDARY=\"a b\\\"c\"",
                                       "boundary", &v),
                     1);
        CHECK_STREQ(v, "a b\"c");
        free(v);
        CHECK_EQ_INT(
            http_header_param(" form-data; name=\"file\"; filename=\"/a;b.txt\"", "filename", &v),
            1);
        CHECK_STREQ(v, "/a;b.txt");
        free(v);
        CHECK_EQ_INT(
            http_header_param(" form-data; name=\"file\"; filename=\"/a;b.txt\"", "name", &v), 1);
        CHECK_STREQ(v, "file");
        free(v);
        CHECK_EQ_INT(http_header_param("text/plain", "boundary", &v), 0);
        CHECK_EQ_INT(http_header_param("x; a=\"unterminated", "a", &v), -EINVAL);
}

int main(void)
{
        test_query();
        test_basic_auth();
        test_media();
        return unit_finish("test-agent-http");
}
