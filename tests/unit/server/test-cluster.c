/* SPDX-License-Identifier: Apache-2.0 */
/* server/cluster: the etcd endpoint list (--cluster), the etcd client against no etcd, and the
 * signed hop header between nodes (hop-auth.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cluster/etcd.h"
#include "cluster/hop-auth.h"
#include "unit.h"

static void test_endpoints(void)
{
        struct etcd *e = NULL;
        CHECK_EQ_INT(etcd_new("etcd://127.0.0.1:2379", &e), 0);
        CHECK_EQ_INT(e->n, 1);
        CHECK_STREQ(e->endpoint[0], "http://127.0.0.1:2379");
        etcd_free(e);
        e = NULL;
        CHECK_EQ_INT(etcd_new("etcd://a:1,b.example:2,[::1]:3", &e), 0);
        CHECK_EQ_INT(e->n, 3);
        CHECK_STREQ(e->endpoint[1], "http://b.example:2");
        CHECK_STREQ(e->endpoint[2], "http://[::1]:3");
        etcd_free(e);
        e = NULL;
        CHECK_EQ_INT(etcd_new("http://h:1", &e), 0); /* the gateway's own scheme */
        etcd_free(e);
        e = NULL;
        /* refused: another scheme, nothing, an empty member, a path, too many members */
        CHECK_EQ_INT(etcd_new("https://h:1", &e), -EINVAL);
        CHECK_EQ_INT(etcd_new("etcd://", &e), -EINVAL);
        CHECK_EQ_INT(etcd_new("etcd://a:1,,b:2", &e), -EINVAL);
        CHECK_EQ_INT(etcd_new("etcd://a:1/x", &e), -EINVAL);
        CHECK_EQ_INT(etcd_new("etcd://a:1,a:2,a:3,a:4,a:5,a:6,a:7,a:8,a:9", &e), -EINVAL);
        CHECK(e == NULL);
}

static void test_unreachable(void)
{
        /* port 1 on loopback: refused at once, every call says so (no hang, no crash) */
        struct etcd *e = NULL;
        CHECK_EQ_INT(etcd_new("etcd://127.0.0.1:1,127.0.0.1:1", &e), 0);
        CHECK_EQ_INT(etcd_put(e, "/k", "v", 0), -EHOSTUNREACH);
        int64_t id = 0;
        CHECK_EQ_INT(etcd_lease_grant(e, 5, &id), -EHOSTUNREACH);
        struct etcd_kv *kvs = NULL;
        size_t n = 0;
        CHECK_EQ_INT(etcd_range_prefix(e, "/k", &kvs, &n, NULL), -EHOSTUNREACH);
        etcd_free(e);
}

static void test_hop_auth(void)
{
        const char *k = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        const char *k2 = "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        const char *t = "/files?path=%2Fhome%2Fuser%2Fa&signature=v1_x";
        time_t now = 1700000000;
        char v[HOP_AUTH_VALUE_MAX];
        hop_auth_sign(k, "GET", t, now, v);
        CHECK(strncmp(v, "v1 1700000000 ", 14) == 0);
        CHECK_EQ_INT(strlen(v), 14 + 64);
        /* valid: now, and within the window either way */
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now), 0);
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now + HOP_AUTH_WINDOW_S), 0);
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now - HOP_AUTH_WINDOW_S), 0);
        /* expired, or from the future */
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now + HOP_AUTH_WINDOW_S + 1), -ETIME);
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", t, now - HOP_AUTH_WINDOW_S - 1), -ETIME);
        /* forged: another secret, another method or target, a changed time or MAC */
        CHECK_EQ_INT(hop_auth_verify(k2, v, "GET", t, now), -EACCES);
        CHECK_EQ_INT(hop_auth_verify(k, v, "POST", t, now), -EACCES);
        CHECK_EQ_INT(hop_auth_verify(k, v, "GET", "/files?path=%2Fetc&signature=v1_x", now),
                     -EACCES);
        char w[HOP_AUTH_VALUE_MAX + 8];
        snprintf(w, sizeof(w), "v1 1700000001 %s", v + 14);
        CHECK_EQ_INT(hop_auth_verify(k, w, "GET", t, now), -EACCES);
        snprintf(w, sizeof(w), "%s", v);
        w[20] = w[20] == '0' ? '1' : '0';
        CHECK_EQ_INT(hop_auth_verify(k, w, "GET", t, now), -EACCES);
        /* what the old nodes sent, and other junk: malformed */
        CHECK_EQ_INT(hop_auth_verify(k, "1", "GET", t, now), -EBADMSG);
        CHECK_EQ_INT(hop_auth_verify(k, "", "GET", t, now), -EBADMSG);
        CHECK_EQ_INT(hop_auth_verify(k, "v1 1700000000 abc", "GET", t, now), -EBADMSG);
        CHECK_EQ_INT(hop_auth_verify(k, "v1 -5 abc", "GET", t, now), -EBADMSG);
        snprintf(w, sizeof(w), "v1 1700000000 %s ", v + 14);
        CHECK_EQ_INT(hop_auth_verify(k, w, "GET", t, now), -EBADMSG);
        snprintf(w, sizeof(w), "%s", v);
        w[20] = 'G';
        CHECK_EQ_INT(hop_auth_verify(k, w, "GET", t, now), -EBADMSG);
        /* no secret: nothing is valid, nothing is sent */
        CHECK_EQ_INT(hop_auth_verify(NULL, v, "GET", t, now), -EACCES);
        CHECK_EQ_INT(hop_auth_verify("", v, "GET", t, now), -EACCES);
        hop_auth_set(NULL);
        char line[HOP_AUTH_HEADER_MAX];
        CHECK(!hop_auth_header_line("GET", t, line));
        CHECK_EQ_INT(hop_auth_check(v, "GET", t), -ETIME); /* 2023: expired before the MAC */
        /* the process's secret: a line that the process accepts */
        hop_auth_set(k);
        CHECK(hop_auth_header_line("GET", t, line));
        CHECK(strncmp(line, "Sbx-Cluster-Hop: v1 ", 20) == 0);
        CHECK_EQ_INT(hop_auth_check(line + 17, "GET", t), 0);
        CHECK_EQ_INT(hop_auth_check(line + 17, "DELETE", t), -EACCES);
        hop_auth_set(NULL);
        CHECK_EQ_INT(hop_auth_check(line + 17, "GET", t), -EACCES);
}

int main(void)
{
        test_endpoints();
        test_unreachable();
        test_hop_auth();
        return unit_finish("test-cluster");
}
