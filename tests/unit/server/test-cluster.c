/* SPDX-License-Identifier: Apache-2.0 */
/* server/cluster: the etcd endpoint list (--cluster), and the etcd client against no etcd. */
#include <errno.h>

#include "cluster/etcd.h"
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

int main(void)
{
        test_endpoints();
        test_unreachable();
        return unit_finish("test-cluster");
}
