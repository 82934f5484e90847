/* SPDX-License-Identifier: Apache-2.0 */
/* Egress policy parsing (egress/policy/net-policy.h), the effective policy and the link addresses
 * (egress/egress.h), DNS message parsing (egress/policy/dns-msg.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "egress/policy/dns-msg.h"
#include "egress/policy/net-policy.h"
#include "egress/egress.h"
#include "unit.h"

static int parse(const char *json, const char *key, struct net_policy *p, const char **msg)
{
        cJSON *j = cJSON_Parse(json);
        int r = net_policy_parse(j, key, p, msg);
        cJSON_Delete(j);
        return r;
}

static const char *lists(const struct net_policy *p)
{
        static char buf[1024];
        cJSON *o = net_policy_lists_json(p);
        char *t = cJSON_PrintUnformatted(o);
        snprintf(buf, sizeof(buf), "%s", t);
        free(t);
        cJSON_Delete(o);
        return buf;
}

static void test_parse(void)
{
        struct net_policy p;
        const char *msg = NULL;
        CHECK_EQ_INT(parse("{}", "network", &p, &msg), 0);
        CHECK_EQ_INT(p.internet, -1);
        CHECK_EQ_INT(p.n_allow + p.n_deny, 0);
        net_policy_done(&p);

        CHECK_EQ_INT(parse("{\"allow_internet_access\":true,\"network\":{\"allowOut\":"
                           "[\"1.2.3.4\",\"10.1.2.3/8\",\"2001:DB8::1/32\",\"Api.Example.COM\","
                           "\"*.example.org.\"],\"denyOut\":[\"0.0.0.0/0\"],"
                           "\"allowPublicTraffic\":false,\"maskRequestHost\":\"x\"}}",
                           "network", &p, &msg),
                     0);
        CHECK_EQ_INT(p.internet, 1);
        CHECK_STREQ(lists(&p),
                    "{\"allowOut\":[\"1.2.3.4/32\",\"10.0.0.0/8\",\"2001:db8::/32\","
                    "\"api.example.com\",\"*.example.org\"],\"denyOut\":[\"0.0.0.0/0\"]}");
        CHECK(net_rule_matches(&p.allow[3], "api.example.com"));
        CHECK(!net_rule_matches(&p.allow[3], "x.api.example.com"));
        CHECK(net_rule_matches(&p.allow[4], "a.b.example.org"));
        CHECK(!net_rule_matches(&p.allow[4], "example.org"));
        CHECK(!net_rule_matches(&p.allow[4], "badexample.org"));
        net_policy_done(&p);

        /* the PUT body has its lists at the top level */
        CHECK_EQ_INT(
            parse("{\"allowOut\":[\"::1\"],\"allow_internet_access\":false}", NULL, &p, &msg), 0);
        CHECK_EQ_INT(p.internet, 0);
        CHECK_EQ_INT(p.n_allow, 1);
        net_policy_done(&p);

        static const char *const bad[] = {
            "{\"allow_internet_access\":1}",
            "{\"network\":[]}",
            "{\"network\":{\"allowOut\":\"1.2.3.4\"}}",
            "{\"network\":{\"allowOut\":[1]}}",
            "{\"network\":{\"allowOut\":[\"1.2.3.4/33\"]}}",
            "{\"network\":{\"allowOut\":[\"::/129\"]}}",
            "{\"network\":{\"allowOut\":[\"1.2.3\"]}}",
            "{\"network\":{\"allowOut\":[\"com\"]}}",
            "{\"network\":{\"allowOut\":[\"-a.com\"]}}",
            "{\"network\":{\"allowOut\":[\"a..com\"]}}",
            "{\"network\":{\"allowOut\":[\"*\"]}}",
            "{\"network\":{\"allowOut\":[\"a.*.com\"]}}",
            "{\"network\":{\"allowOut\":[\"a_b.com\"]}}",
            "{\"network\":{\"allowOut\":[\"1.2.3.4/\"]}}",
            "{\"network\":{\"allowOut\":[\"1.2.3.4/-1\"]}}",
            "{\"network\":{\"denyOut\":[\"example.com\"]}}",
            "{\"network\":{\"egressProxy\":{\"address\":\"p:1080\"}}}",
            "{\"network\":{\"rules\":{\"*\":[{}]}}}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                msg = NULL;
                int r = parse(bad[i], "network", &p, &msg);
                CHECK_EQ_INT(r, -EINVAL);
                CHECK(msg != NULL);
                if (r != -EINVAL)
                        fprintf(stderr, "accepted: %s\n", bad[i]);
        }
        CHECK_EQ_INT(parse("{\"network\":{\"denyOut\":[\"example.com\"]}}", "network", &p, &msg),
                     -EINVAL);
        CHECK(strstr(msg, "not supported for deny rules") != NULL);
        /* empty rules are what the SDK sends for none */
        CHECK_EQ_INT(parse("{\"network\":{\"rules\":{}}}", "network", &p, &msg), 0);
        net_policy_done(&p);

        /* 257 entries: over NET_RULES_MAX */
        cJSON *j = cJSON_CreateObject(), *n = cJSON_AddObjectToObject(j, "network");
        cJSON *a = cJSON_AddArrayToObject(n, "allowOut");
        for (int i = 0; i <= NET_RULES_MAX; i++)
                cJSON_AddItemToArray(a, cJSON_CreateString("1.2.3.4"));
        CHECK_EQ_INT(net_policy_parse(j, "network", &p, &msg), -EINVAL);
        cJSON_Delete(j);
}

static void test_effective(void)
{
        struct sbxd_config c = {.egress_max = EGRESS_MAX_ANY};
        struct net_policy asked, eff;
        const char *msg;
        CHECK_EQ_INT(parse("{}", "network", &asked, &msg), 0);
        CHECK_EQ_INT(egress_effective(&c, &asked, &eff), 0); /* deny by default: no link */
        net_policy_done(&eff);
        c.egress_allow = true;
        CHECK_EQ_INT(egress_effective(&c, &asked, &eff), 1);
        CHECK_EQ_INT(eff.internet, 1);
        net_policy_done(&eff);
        net_policy_done(&asked);

        /* allTraffic in denyOut closes the internet, allowOut still passes */
        CHECK_EQ_INT(parse("{\"allow_internet_access\":true,\"network\":{\"allowOut\":"
                           "[\"1.2.3.4\"],\"denyOut\":[\"0.0.0.0/0\",\"5.0.0.0/8\"]}}",
                           "network", &asked, &msg),
                     0);
        CHECK_EQ_INT(egress_effective(&c, &asked, &eff), 1);
        CHECK_EQ_INT(eff.internet, 0);
        CHECK_STREQ(lists(&eff), "{\"allowOut\":[\"1.2.3.4/32\"],\"denyOut\":[\"5.0.0.0/8\"]}");
        net_policy_done(&eff);
        /* caps */
        c.egress_allow = false;
        c.egress_max = EGRESS_MAX_LISTED;
        CHECK_EQ_INT(egress_effective(&c, &asked, &eff), 1);
        CHECK_EQ_INT(eff.internet, 0);
        net_policy_done(&eff);
        c.egress_max = EGRESS_MAX_NONE;
        CHECK_EQ_INT(egress_effective(&c, &asked, &eff), 0);
        net_policy_done(&eff);
        net_policy_done(&asked);

        /* allowOut ::/0 is the internet, not a way past the blocked ranges */
        c.egress_max = EGRESS_MAX_ANY;
        CHECK_EQ_INT(parse("{\"network\":{\"allowOut\":[\"::/0\"]}}", "network", &asked, &msg), 0);
        CHECK_EQ_INT(egress_effective(&c, &asked, &eff), 1);
        CHECK_EQ_INT(eff.internet, 1);
        CHECK_EQ_INT(eff.n_allow, 0);
        net_policy_done(&eff);
        net_policy_done(&asked);
}

static void test_link(void)
{
        struct sbx_jail_egress l;
        char a[INET6_ADDRSTRLEN];
        egress_link(4095, &l);
        CHECK_STREQ(l.host_if, "sbxe4095");
        CHECK_STREQ(inet_ntop(AF_INET, l.addr4, a, sizeof(a)), "10.200.63.254");
        CHECK_STREQ(inet_ntop(AF_INET, l.gw4, a, sizeof(a)), "10.200.63.253");
        CHECK_STREQ(inet_ntop(AF_INET6, l.addr6, a, sizeof(a)), "fd73:6278:6567:fff::2");
        CHECK_STREQ(inet_ntop(AF_INET6, l.gw6, a, sizeof(a)), "fd73:6278:6567:fff::1");
        CHECK_EQ_INT(l.prefix4, 30);
        CHECK_EQ_INT(l.prefix6, 64);
        egress_link(0, &l);
        CHECK_STREQ(inet_ntop(AF_INET, l.addr4, a, sizeof(a)), "10.200.0.2");
}

/* "\x03www\x07example\x03com\x00" style names */
static size_t put_name(uint8_t *p, const char *name)
{
        size_t n = 0;
        while (*name) {
                size_t l = strcspn(name, ".");
                p[n++] = (uint8_t)l;
                memcpy(p + n, name, l);
                n += l;
                name += l + (name[l] == '.');
        }
        p[n++] = 0;
        return n;
}

static void test_dns(void)
{
        uint8_t m[512] = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
        size_t n = 12 + put_name(m + 12, "WWW.Example.com");
        memcpy(m + n, "\x00\x01\x00\x01", 4);
        n += 4;
        struct dns_question q;
        CHECK_EQ_INT(dns_parse_question(m, n, &q), 0);
        CHECK_STREQ(q.name, "www.example.com");
        CHECK_EQ_INT(q.id, 0x1234);
        CHECK_EQ_INT(q.qtype, DNS_TYPE_A);
        CHECK_EQ_INT(q.end, n);
        CHECK_EQ_INT(dns_parse_question(m, n - 1, &q), -EBADMSG);
        CHECK_EQ_INT(dns_parse_question(m, 11, &q), -EBADMSG);

        /* an answer: the question, a CNAME, an A and an AAAA by compression pointers */
        uint8_t r[512];
        memcpy(r, m, n);
        r[2] = 0x81;
        r[3] = 0x80;
        r[7] = 3; /* ANCOUNT */
        size_t k = n;
        memcpy(r + k, "\xc0\x0c\x00\x05\x00\x01\x00\x00\x00\x3c\x00\x02\xc0\x10", 14);
        k += 14;
        memcpy(r + k, "\xc0\x0c\x00\x01\x00\x01\x00\x00\x01\x2c\x00\x04\xcb\x00\x71\x0a", 16);
        k += 16;
        memcpy(r + k, "\xc0\x0c\x00\x1c\x00\x01\x00\x00\x00\x1e\x00\x10", 12);
        k += 12;
        memcpy(r + k, "\x20\x01\x0d\xb8\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x10", 16);
        k += 16;
        struct dns_addrs a;
        CHECK_EQ_INT(dns_answer_addrs(r, k, &a), 0);
        CHECK_EQ_INT(a.n4, 1);
        CHECK_EQ_INT(a.n6, 1);
        CHECK_EQ_INT(a.min_ttl, 30);
        CHECK(memcmp(a.v4[0], "\xcb\x00\x71\x0a", 4) == 0);
        CHECK_EQ_INT(dns_answer_addrs(r, k - 1, &a), -EBADMSG);

        /* a pointer loop and a label with a dot in it are refused */
        uint8_t loop[64] = {0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1};
        CHECK_EQ_INT(dns_parse_question(loop, 18, &q), -EBADMSG);
        uint8_t dot[64] = {0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'a', '.', 'b', 0, 0, 1, 0, 1};
        CHECK_EQ_INT(dns_parse_question(dot, 21, &q), -EBADMSG);

        /* the error reply: header and question, QR, rcode, no records */
        uint8_t out[512];
        CHECK_EQ_INT(dns_parse_question(m, n, &q), 0);
        size_t e = dns_error_reply(m, &q, DNS_RCODE_REFUSED, out, sizeof(out));
        CHECK_EQ_INT(e, n);
        CHECK_EQ_INT(out[2] & 0x80, 0x80);
        CHECK_EQ_INT(out[3] & 0x0f, DNS_RCODE_REFUSED);
        CHECK_EQ_INT(out[7], 0);
        CHECK_EQ_INT(dns_error_reply(m, &q, DNS_RCODE_REFUSED, out, 10), 0);
}

int main(void)
{
        test_parse();
        test_effective();
        test_link();
        test_dns();
        return unit_finish("test-egress");
}
