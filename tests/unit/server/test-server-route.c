/* SPDX-License-Identifier: Apache-2.0 */
/* Proxy classification and token rules, hop-by-hop headers, query extraction/re-encoding,
 * config. The route table: test-route-table.c. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "http/http.h"
#include "core/query.h"
#include "http/route.h"
#include "core/server-config.h"
#include "e2b/ingress.h"
#include "unit.h"
#include "url-util.h"

/* route_classify(port header, id header, Host) → kind, and the port and id where given (0 and
 * NULL: not checked); an invalid port header is ROUTE_BAD_PORT. */
static const struct {
        const char *port_hdr, *id_hdr, *host;
        enum route_kind kind;
        int port;
        const char *id;
} classify_cases[] = {
    {NULL, NULL, "127.0.0.1:3000", ROUTE_CONTROL, 0, NULL},
    {"49983", "abc", "127.0.0.1:3000", ROUTE_PROXY, 49983, "abc"},
    {"49999", NULL, NULL, ROUTE_PROXY, 0, ""},
    /* a user port */
    {"8000", "abc", NULL, ROUTE_PROXY, 8000, NULL},
    {"0", "abc", NULL, ROUTE_BAD_PORT, 0, NULL},
    {"65536", "abc", NULL, ROUTE_BAD_PORT, 0, NULL},
    {"-1", "abc", NULL, ROUTE_BAD_PORT, 0, NULL},
    {"abc", "abc", NULL, ROUTE_BAD_PORT, 0, NULL},
    {"49983x", "abc", NULL, ROUTE_BAD_PORT, 0, NULL},
    {"", "abc", NULL, ROUTE_BAD_PORT, 0, NULL},
    {"99999", "abc", NULL, ROUTE_BAD_PORT, 0, NULL},
    {NULL, NULL, "49983-abc123.e2b.local", ROUTE_PROXY, 49983, "abc123"},
    {NULL, NULL, "49999-abc.example.test:443", ROUTE_PROXY, 49999, NULL},
    {NULL, NULL, "8080-abc.example.test", ROUTE_PROXY, 8080, "abc"},
    {NULL, NULL, "3000-abc.localhost:3000", ROUTE_PROXY, 3000, NULL},
    {NULL, NULL, "0-abc.example.test", ROUTE_CONTROL, 0, NULL},
    {NULL, NULL, "70000-abc.example.test", ROUTE_CONTROL, 0, NULL},
    {NULL, NULL, "49983-ABC.example.test", ROUTE_CONTROL, 0, NULL},
    {NULL, NULL, "49983-.example", ROUTE_CONTROL, 0, NULL},
    {NULL, NULL, "api.example.test", ROUTE_CONTROL, 0, NULL},
    /* an id header without a port header is not routed by Host */
    {NULL, "abc", "49983-abc.e2b.local", ROUTE_CONTROL, 0, NULL},
};

static void test_classify(void)
{
        for (size_t i = 0; i < sizeof(classify_cases) / sizeof(classify_cases[0]); i++) {
                struct route_target t;
                const char *host = classify_cases[i].host;
                unit_case = host ? host : classify_cases[i].port_hdr;
                route_classify(classify_cases[i].port_hdr, classify_cases[i].id_hdr, host, &t);
                CHECK_EQ_INT(t.kind, classify_cases[i].kind);
                if (classify_cases[i].port)
                        CHECK_EQ_INT(t.port, classify_cases[i].port);
                CHECK_STREQ_IF(t.id, classify_cases[i].id);
        }
        unit_case = NULL;
}

static void test_proxy_rules(void)
{
        CHECK(route_proxy_forbidden(49983, "/init"));
        CHECK(route_proxy_forbidden(49983, "//init"));
        CHECK(route_proxy_forbidden(49983, "/init/"));
        CHECK(route_proxy_forbidden(49999, "/init"));
        CHECK(route_proxy_forbidden(49983, "/freeze"));
        CHECK(route_proxy_forbidden(49983, "/upgrade"));
        CHECK(!route_proxy_forbidden(49983, "/initx"));
        CHECK(!route_proxy_forbidden(49983, "/files"));
        CHECK(!route_proxy_forbidden(49983, "/process.Process/Start"));
        CHECK(!route_proxy_forbidden(8000, "/init")); /* the user's own server's path */
        CHECK(!route_proxy_needs_token(8000, "POST", "/execute"));
        CHECK(route_port_is_user(8000) && route_port_is_user(1));
        CHECK(!route_port_is_user(0) && !route_port_is_user(49983) && !route_port_is_user(49999));

        CHECK(!route_proxy_needs_token(49983, "GET", "/health"));
        CHECK(route_proxy_needs_token(49983, "POST", "/health"));
        CHECK(route_proxy_needs_token(49983, "GET", "/files"));
        CHECK(route_proxy_needs_token(49983, "POST", "/process.Process/Start"));
        CHECK(route_proxy_needs_token(49999, "POST", "/execute"));
        CHECK(route_proxy_needs_token(49999, "POST", "//execute"));
        CHECK(route_proxy_needs_token(49999, "POST", "/execute/"));
        CHECK(!route_proxy_needs_token(49999, "POST", "/contexts"));
        CHECK(!route_proxy_needs_token(49999, "GET", "/health"));

        CHECK(http_hop_by_hop("connection"));
        CHECK(http_hop_by_hop("Transfer-Encoding"));
        CHECK(http_hop_by_hop("E2b-Sandbox-Id"));
        CHECK(!http_hop_by_hop("Content-Type"));
        CHECK(!http_hop_by_hop("X-Access-Token"));
        CHECK(!http_hop_by_hop("Authorization"));
}

static void test_query(void)
{
        char *q = NULL;
        /* a request target → its query */
        static const char *const targets[][2] = {
            {"/files?path=%2Fhome%2Fuser%2Fa.txt&username=user",
             "path=%2Fhome%2Fuser%2Fa.txt&username=user"},
            {"/health", ""},
            {"/x?a=1#frag", "a=1"},
            {"/x?", ""},
        };
        for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
                unit_case = targets[i][0];
                CHECK_EQ_INT(query_from_target(targets[i][0], &q), 0);
                CHECK_STREQ(q, targets[i][1]);
                free(q);
        }
        unit_case = NULL;

        q = NULL;
        CHECK_EQ_INT(url_query_append(&q, "path", "/home/user/a.txt"), 0);
        CHECK_EQ_INT(url_query_append(&q, "username", "user"), 0);
        CHECK_STREQ(q, "path=%2Fhome%2Fuser%2Fa.txt&username=user");
        CHECK_EQ_INT(url_query_append(&q, "sig", "v1_a+b/c=="), 0);
        CHECK_STREQ(q, "path=%2Fhome%2Fuser%2Fa.txt&username=user&sig=v1_a%2Bb%2Fc%3D%3D");
        CHECK_EQ_INT(url_query_append(&q, "flag", NULL), 0);
        CHECK_STREQ(q, "path=%2Fhome%2Fuser%2Fa.txt&username=user&sig=v1_a%2Bb%2Fc%3D%3D&flag");
        free(q);
        q = NULL;
        CHECK_EQ_INT(url_query_append(&q, "k", "ü ~-._"), 0);
        CHECK_STREQ(q, "k=%C3%BC%20~-._");
        free(q);

        char *d = NULL;
        CHECK_EQ_INT(url_percent_decode("%2Fhome%2fuser+x", 16, &d), 0);
        CHECK_STREQ(d, "/home/user x");
        free(d);
        CHECK_EQ_INT(url_percent_decode("%00", 3, &d), -EINVAL);
        CHECK_EQ_INT(url_percent_decode("%2", 2, &d), -EINVAL);
        CHECK_EQ_INT(url_percent_decode("%zz", 3, &d), -EINVAL);

        /* round trip: decode(encode(x)) == x */
        q = NULL;
        CHECK_EQ_INT(url_query_append(&q, "a&b=c", "d=e&f%"), 0);
        size_t pos = 0;
        char *k, *v;
        CHECK_EQ_INT(query_next_pair(q, &pos, &k, &v), 1);
        CHECK_STREQ(k, "a&b=c");
        CHECK_STREQ(v, "d=e&f%");
        free(k);
        free(v);
        CHECK_EQ_INT(query_next_pair(q, &pos, &k, &v), 0);
        free(q);
}

static void test_listen(void)
{
        struct sockaddr_storage ss;
        socklen_t len;
        char *host = NULL;
        CHECK_EQ_INT(config_parse_listen("127.0.0.1:3000", &ss, &len, &host), 0);
        CHECK_STREQ(host, "127.0.0.1");
        CHECK_EQ_INT(ntohs(((struct sockaddr_in *)&ss)->sin_port), 3000);
        free(host);
        CHECK_EQ_INT(config_parse_listen("[::1]:0", &ss, &len, &host), 0);
        CHECK_EQ_INT(ss.ss_family, AF_INET6);
        CHECK_STREQ(host, "::1");
        free(host);
        CHECK_EQ_INT(config_parse_listen("127.0.0.1", &ss, &len, NULL), -EINVAL);
        CHECK_EQ_INT(config_parse_listen("127.0.0.1:65536", &ss, &len, NULL), -EINVAL);
        CHECK_EQ_INT(config_parse_listen("localhost:3000", &ss, &len, NULL), -EINVAL);
        CHECK_EQ_INT(config_parse_listen("1.2.3.4:x", &ss, &len, NULL), -EINVAL);
}

/* One sbxd command line into c (0, or -EINVAL for a refused one). */
static int parse_args(struct sbxd_config *c, const char *a1, const char *a2, const char *a3,
                      const char *a4)
{
        char *argv[] = {(char *)"sbxd",      (char *)"--jailer",
                        (char *)"/bin/true", (char *)"--agent",
                        (char *)"/bin/true", (char *)a1,
                        (char *)a2,          (char *)a3,
                        (char *)a4,          NULL};
        int argc = 5;
        while (argv[argc])
                argc++;
        optind = 0;
        FILE *saved = stderr;
        stderr = fopen("/dev/null", "w");
        enum option_command cmd;
        const struct sbxd_option *get;
        int r = config_parse(argc, argv, c, &cmd, &get);
        fclose(stderr);
        stderr = saved;
        return r;
}

/* The egress defaults (a default install lets nothing out: server/README.md "Command line and
 * config file") and --public-url. */
static void test_config(void)
{
        struct sbxd_config c;
        CHECK_EQ_INT(parse_args(&c, NULL, NULL, NULL, NULL), 0);
        CHECK(!c.egress_allow);
        CHECK_EQ_INT(c.egress_max, EGRESS_MAX_LISTED);
        CHECK(!c.public_url);
        config_done(&c);
        CHECK_EQ_INT(parse_args(&c, "--egress", "allow", NULL, NULL), 0);
        CHECK_EQ_INT(c.egress_max, EGRESS_MAX_ANY); /* the opt-in lifts the cap */
        config_done(&c);
        CHECK_EQ_INT(parse_args(&c, "--egress", "allow", "--egress-max", "listed"), -EINVAL);
        CHECK_EQ_INT(parse_args(&c, "--egress-max", "any", NULL, NULL), 0);
        CHECK_EQ_INT(c.egress_max, EGRESS_MAX_ANY);
        config_done(&c);
        CHECK_EQ_INT(parse_args(&c, "--public-url", "https://sbx.example.com/", NULL, NULL), 0);
        CHECK_STREQ(c.public_url, "https://sbx.example.com");
        config_done(&c);
        static const char *const good[] = {"http://127.0.0.1:3000", "https://[::1]:8443",
                                           "https://sbx.example.com:8443/sbx"};
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                CHECK_EQ_INT(parse_args(&c, "--public-url", good[i], NULL, NULL), 0);
                config_done(&c);
        }
        static const char *const bad[] = {"sbx.example.com", "ftp://h",     "https://",
                                          "https://a b",     "https://u@h", "https://h/?q",
                                          "https://h:99999", "https://[::1"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                CHECK_EQ_INT(parse_args(&c, "--public-url", bad[i], NULL, NULL), -EINVAL);
}

/* E2B's ingress rules (e2b/ingress.h): the traffic token on every port but envd's, and the
 * ${PORT} of maskRequestHost. */
static void test_ingress(void)
{
        const char *tok = "00112233445566778899aabbccddeeff0011223344556677";
        CHECK_EQ_INT(ingress_check("", 8000, NULL), INGRESS_OK); /* public */
        CHECK_EQ_INT(ingress_check(tok, 8000, NULL), INGRESS_MISSING);
        CHECK_EQ_INT(ingress_check(tok, 8000, ""), INGRESS_MISSING);
        CHECK_EQ_INT(ingress_check(tok, 8000, "0011"), INGRESS_INVALID);
        CHECK_EQ_INT(ingress_check(tok, 8000, tok), INGRESS_OK);
        CHECK_EQ_INT(ingress_check(tok, 49999, NULL), INGRESS_MISSING); /* the interpreter too */
        CHECK_EQ_INT(ingress_check(tok, 49983, NULL), INGRESS_OK);      /* envd has its own token */

        char out[64];
        CHECK_EQ_INT(ingress_mask_host("app:${PORT}", 8000, out, sizeof(out)), 0);
        CHECK_STREQ(out, "app:8000");
        CHECK_EQ_INT(ingress_mask_host("${PORT}-${PORT}.x", 1, out, sizeof(out)), 0);
        CHECK_STREQ(out, "1-1.x");
        CHECK_EQ_INT(ingress_mask_host("${PORT", 80, out, sizeof(out)), 0);
        CHECK_STREQ(out, "${PORT");
        CHECK_EQ_INT(ingress_mask_host("plain.host", 80, out, sizeof(out)), 0);
        CHECK_STREQ(out, "plain.host");
        CHECK_EQ_INT(ingress_mask_host("0123456789${PORT}", 65535, out, 16), 0);
        CHECK_STREQ(out, "012345678965535");
        CHECK_EQ_INT(ingress_mask_host("0123456789${PORT}", 65535, out, 15), -ENAMETOOLONG);
}

/* A cookie a sandbox's server sets stays its own: a Domain wider than its host goes. */
static void test_cookies(void)
{
        const char *vals[] = {"wide=1; Domain=sbx.localhost; Path=/",
                              "dot=1; domain=.SBX.localhost",
                              "spaced=1; Domain = sbx.localhost ; Secure",
                              "own=1; Domain=8000-abc.sbx.localhost",
                              "other=1; Domain=8000-xyz.sbx.localhost",
                              "plain=1; HttpOnly",
                              "two=1; Domain=8000-abc.sbx.localhost; Domain=localhost",
                              "domain=sbx.localhost; Domain=sbx.localhost"};
        struct sbx_header hs[9];
        size_t n = sizeof(vals) / sizeof(vals[0]);
        for (size_t i = 0; i < n; i++)
                hs[i] = (struct sbx_header){strdup("Set-Cookie"), strdup(vals[i])};
        hs[n] = (struct sbx_header){strdup("X-Domain"), strdup("Domain=sbx.localhost")};
        struct sbx_resp_head h = {.status = 200, .n_headers = n + 1, .headers = malloc(sizeof(hs))};
        memcpy(h.headers, hs, sizeof(hs));
        CHECK_EQ_INT(ingress_scope_cookies(&h, "8000-abc.sbx.localhost:3000"), 0);
        CHECK_STREQ(h.headers[0].value, "wide=1; Path=/");
        CHECK_STREQ(h.headers[1].value, "dot=1");
        CHECK_STREQ(h.headers[2].value, "spaced=1; Secure");
        CHECK_STREQ(h.headers[3].value, "own=1; Domain=8000-abc.sbx.localhost");
        CHECK_STREQ(h.headers[4].value, "other=1");
        CHECK_STREQ(h.headers[5].value, "plain=1; HttpOnly");
        CHECK_STREQ(h.headers[6].value, "two=1; Domain=8000-abc.sbx.localhost");
        /* a cookie named "domain": its name stays, its Domain attribute goes */
        CHECK_STREQ(h.headers[7].value, "domain=sbx.localhost");
        CHECK_STREQ(h.headers[8].value, "Domain=sbx.localhost"); /* not a cookie */
        sbx_resp_head_free(&h);
}

int main(void)
{
        test_cookies();
        test_classify();
        test_ingress();
        test_proxy_rules();
        test_query();
        test_listen();
        test_config();
        return unit_finish("test-server-route");
}
