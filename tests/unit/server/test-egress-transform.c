/* SPDX-License-Identifier: Apache-2.0 */
/* network.rules (egress/policy/net-policy.h, net-transform.c) and what the egress proxy reads and
 * writes (egress/policy/proxy-parse.h): the ClientHello's server name, request heads, header
 * rewriting, secret placeholders. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "egress/policy/net-policy.h"
#include "egress/policy/proxy-parse.h"
#include "unit.h"

static int parse(const char *json, struct net_policy *p, const char **msg)
{
        cJSON *j = cJSON_Parse(json);
        int r = net_policy_parse(j, "network", p, msg);
        cJSON_Delete(j);
        return r;
}

static void test_rules(void)
{
        struct net_policy p;
        const char *msg = NULL;
        CHECK_EQ_INT(parse("{\"network\":{\"rules\":{"
                           "\"API.Example.com\":[{\"transform\":{\"headers\":{\"A\":\"1\","
                           "\"B\":\"2\"}}},{\"transform\":{\"headers\":{\"a\":\"3\"}}}],"
                           "\"*.example.com\":[{\"transform\":{\"headers\":{\"W\":\"1\"}}}],"
                           "\"*.b.example.com\":[{}],"
                           "\"*.com\":[{\"transform\":{\"headers\":{\"X\":\"${e2b.secrets.k}"
                           "\"}}}]}}}",
                           &p, &msg),
                     0);
        CHECK_EQ_INT(p.n_xf, 4);
        const struct net_transform *t = net_transform_find(&p, "api.example.com");
        CHECK(t && !t->domain.wildcard);
        /* a later rule's header replaces an earlier one, names case-insensitively */
        char *h = t ? cJSON_PrintUnformatted(t->headers) : NULL;
        CHECK_STREQ(h, "{\"B\":\"2\",\"a\":\"3\"}");
        free(h);
        t = net_transform_find(&p, "x.b.example.com"); /* the longest wildcard */
        CHECK(t && strcmp(t->domain.name, "b.example.com") == 0);
        t = net_transform_find(&p, "other.example.com");
        CHECK(t && strcmp(t->domain.name, "example.com") == 0);
        t = net_transform_find(&p, "example.com"); /* not the apex: *.com does */
        CHECK(t && strcmp(t->domain.name, "com") == 0);
        CHECK(net_transform_find(&p, "example.org") == NULL);
        struct net_policy c;
        CHECK_EQ_INT(net_policy_copy(&p, &c), 0);
        CHECK_EQ_INT(c.n_xf, 4);
        cJSON *rj = net_policy_rules_json(&c);
        struct net_policy back;
        cJSON *body = cJSON_CreateObject();
        cJSON_AddItemToObject(body, "rules", rj);
        CHECK_EQ_INT(net_policy_parse(body, NULL, &back, &msg), 0); /* the record round trip */
        CHECK_EQ_INT(back.n_xf, 4);
        cJSON_Delete(body);
        net_policy_done(&back);
        net_policy_done(&c);
        net_policy_done(&p);

        static const char *const bad[] = {
            "{\"network\":{\"rules\":[]}}",
            "{\"network\":{\"rules\":{\"*\":[]}}}",
            "{\"network\":{\"rules\":{\"a b.com\":[]}}}",
            "{\"network\":{\"rules\":{\"a.com\":{}}}}",
            "{\"network\":{\"rules\":{\"a.com\":[{\"transform\":1}]}}}",
            "{\"network\":{\"rules\":{\"a.com\":[{\"transform\":{\"headers\":{\"A\":1}}}]}}}",
            "{\"network\":{\"rules\":{\"a.com\":[{\"transform\":{\"headers\":{\"Host\":\"x\"}}}]}}"
            "}",
            "{\"network\":{\"rules\":{\"a.com\":[{\"transform\":{\"headers\":{\"Content-Length\":"
            "\"1\"}}}]}}}",
            "{\"network\":{\"rules\":{\"a.com\":[{\"transform\":{\"headers\":{\"A:\":\"x\"}}}]}}}",
            "{\"network\":{\"rules\":{\"a.com\":[{\"transform\":{\"headers\":{\"A\":\"x\\r\\n\"}}}]"
            "}"
            "}}",
            "{\"network\":{\"rules\":{\"a.com\":[{\"transform\":{\"headers\":{\"A\":\"${e2b."
            "secrets.}\"}}}]}}}",
            "{\"network\":{\"rules\":{\"a.com\":[{\"transform\":{\"headers\":{\"A\":\"${e2b."
            "secrets.x\"}}}]}}}",
            "{\"network\":{\"rules\":{\"a.com\":[{\"transform\":{\"headers\":{\"A\":\"${e2b."
            "identity.tokens.t}\"}}}]}}}",
            "{\"network\":{\"rules\":{\"a.com\":[],\"A.com\":[]}}}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                msg = NULL;
                int r = parse(bad[i], &p, &msg);
                CHECK_EQ_INT(r, -EINVAL);
                CHECK(msg != NULL);
                if (r != -EINVAL)
                        fprintf(stderr, "accepted: %s\n", bad[i]);
                if (r >= 0)
                        net_policy_done(&p);
        }
}

/* A ClientHello record with SNI name (and a second extension before it). */
static size_t hello(unsigned char *b, const char *name)
{
        size_t nl = strlen(name), o = 0;
        unsigned char ext[512];
        size_t e = 0;
        ext[e++] = 0x00, ext[e++] = 0x0b, ext[e++] = 0, ext[e++] = 2, ext[e++] = 1, ext[e++] = 0;
        ext[e++] = 0, ext[e++] = 0; /* server_name */
        ext[e++] = (unsigned char)((nl + 5) >> 8), ext[e++] = (unsigned char)(nl + 5);
        ext[e++] = (unsigned char)((nl + 3) >> 8), ext[e++] = (unsigned char)(nl + 3);
        ext[e++] = 0, ext[e++] = (unsigned char)(nl >> 8), ext[e++] = (unsigned char)nl;
        memcpy(ext + e, name, nl);
        e += nl;
        unsigned char body[1024];
        size_t n = 0;
        body[n++] = 3, body[n++] = 3;
        memset(body + n, 7, 32), n += 32;
        body[n++] = 0;                                                 /* session id */
        body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 1; /* one suite */
        body[n++] = 1, body[n++] = 0;                                  /* compression */
        body[n++] = (unsigned char)(e >> 8), body[n++] = (unsigned char)e;
        memcpy(body + n, ext, e), n += e;
        b[o++] = 22, b[o++] = 3, b[o++] = 1;
        b[o++] = (unsigned char)((n + 4) >> 8), b[o++] = (unsigned char)(n + 4);
        b[o++] = 1, b[o++] = 0, b[o++] = (unsigned char)(n >> 8), b[o++] = (unsigned char)n;
        memcpy(b + o, body, n);
        return o + n;
}

static void test_sni(void)
{
        unsigned char b[2048];
        char name[256];
        size_t n = hello(b, "Api.Example.com");
        CHECK_EQ_INT(proxy_tls_sni(b, n, name), 1);
        CHECK_STREQ(name, "api.example.com");
        for (size_t k = 0; k < n; k++) /* any prefix: more is needed, never a misread */
                CHECK_EQ_INT(proxy_tls_sni(b, k, name), 0);
        b[9 + 2 + 32 + 1 + 1] = 0xff; /* the suites' length runs past the message */
        CHECK_EQ_INT(proxy_tls_sni(b, n, name), -EINVAL);
        n = hello(b, "bad_name.com");
        CHECK_EQ_INT(proxy_tls_sni(b, n, name), -EINVAL);
        CHECK_EQ_INT(proxy_tls_sni((const unsigned char *)"GET / HTTP/1.1\r\n", 16, name), -EINVAL);
}

static int fake_secret(void *arg, const char *name, char *buf, size_t size)
{
        if (strcmp(name, "k") != 0)
                return -ENOENT;
        if (size < 4)
                return -ENOBUFS;
        memcpy(buf, "SEC", 4);
        return 3;
}

static void test_http(void)
{
        const char *head = "GET /x HTTP/1.1\r\nHost: API.example.com:443\r\nAuthorization: "
                           "mine\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\nbody";
        size_t len = strlen(head);
        int hl = proxy_http_head_len(head, len);
        CHECK_EQ_INT(hl, (int)len - 4);
        CHECK_EQ_INT(proxy_http_head_len(head, 20), 0);
        CHECK_EQ_INT(proxy_http_head_len("\x16\x03\x01", 3), -EINVAL);
        char name[256];
        CHECK_EQ_INT(proxy_http_host(head, (size_t)hl, name), 0);
        CHECK_STREQ(name, "api.example.com");
        cJSON *h = cJSON_CreateObject();
        cJSON_AddStringToObject(h, "authorization", "Bearer SEC");
        static char out[2 * PROXY_HEAD_MAX + 2];
        int n = proxy_http_rewrite(head, (size_t)hl, h, out, sizeof(out));
        CHECK(n > 0);
        CHECK_STREQ(out, "GET /x HTTP/1.1\r\nHost: API.example.com:443\r\nAccept: */*\r\n"
                         "authorization: Bearer SEC\r\nConnection: close\r\n\r\n");
        CHECK_EQ_INT(proxy_http_rewrite(head, (size_t)hl, h, out, 40), -ENOBUFS);
        cJSON_Delete(h);

        CHECK_EQ_INT(proxy_http_check_target(head, (size_t)hl, "api.example.com"), 0);
        CHECK_EQ_INT(proxy_http_check_target(head, (size_t)hl, "other.example.com"), -EXDEV);
        const char *abs = "GET https://evil.test/ HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
        CHECK_EQ_INT(proxy_http_check_target(abs, strlen(abs), "api.example.com"), -EINVAL);
        const char *nohost = "GET / HTTP/1.1\r\nAccept: */*\r\n\r\n";
        CHECK_EQ_INT(proxy_http_check_target(nohost, strlen(nohost), "api.example.com"), -EINVAL);
        const char *star = "OPTIONS * HTTP/1.1\r\nHost: api.example.com\r\n\r\n";
        CHECK_EQ_INT(proxy_http_check_target(star, strlen(star), "api.example.com"), 0);
        /* heads an upstream (a CDN's front end) could read with another Host than the proxy
         * did: the secret would go there (found by fuzz-proxy-parse) */
        static const char *const two_ways[] = {
            "GET / HTTP/1.1\r\nHost: api.example.com\r\nHost: evil.test\r\n\r\n",
            "GET / HTTP/1.1\r\nhost: api.example.com\r\nHOST: api.example.com\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: api.example.com\r\nX: a\nHost: evil.test\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: api.example.com\r\nX: a\rHost: evil.test\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: api.example.com\r\nX: a\r\n Host: evil.test\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: api.example.com\r\n\tX: a\r\n\r\n",
        };
        for (size_t i = 0; i < sizeof(two_ways) / sizeof(two_ways[0]); i++)
                CHECK_EQ_INT(
                    proxy_http_check_target(two_ways[i], strlen(two_ways[i]), "api.example.com"),
                    -EINVAL);
        const char nul[] = "GET / HTTP/1.1\r\nHost: api.example.com\r\nX: a\0b\r\n\r\n";
        CHECK_EQ_INT(proxy_http_check_target(nul, sizeof(nul) - 1, "api.example.com"), -EINVAL);

        char v[64];
        const char *missing = NULL;
        CHECK_EQ_INT(proxy_resolve_value("Bearer ${e2b.secrets.k}!${x}", fake_secret, NULL, v,
                                         sizeof(v), &missing),
                     15);
        CHECK_STREQ(v, "Bearer SEC!${x}");
        CHECK_EQ_INT(
            proxy_resolve_value("${e2b.secrets.nope}", fake_secret, NULL, v, sizeof(v), &missing),
            -ENOENT);
        CHECK_STREQ(missing, "nope");
        CHECK_EQ_INT(proxy_resolve_value("${e2b.secrets.k}", fake_secret, NULL, v, 3, &missing),
                     -ENOBUFS);
}

int main(void)
{
        test_rules();
        test_sni();
        test_http();
        return unit_finish("test-egress-transform");
}
