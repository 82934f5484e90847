/* SPDX-License-Identifier: Apache-2.0 */
/* server/cluster/cluster-volumes.h: the volume-names/<name> value, the volume a path names,
 * the volume names a create's volumeMounts lists. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster-volumes.h"
#include "unit.h"

#define ID  "0b0e3c5e-1f5c-4a47-9d0e-2f3a4b5c6d7e"
#define ID2 "11111111-2222-4333-8444-555555555555"

static void test_name_value(void)
{
        char id[VOLUME_ID_LEN + 1], node[CLUSTER_NAME_MAX + 1];
        char *v = cluster_volume_name_format(ID, "n1");
        CHECK_STREQ(v, "{\"id\":\"" ID "\",\"node\":\"n1\"}");
        CHECK_EQ_INT(cluster_volume_name_parse(v, id, node), 0);
        CHECK_STREQ(id, ID);
        CHECK_STREQ(node, "n1");
        free(v);
        /* refused: not JSON, no node, an empty one, an id that is no UUID, a node too long */
        CHECK_EQ_INT(cluster_volume_name_parse("n1", id, node), -EINVAL);
        CHECK_EQ_INT(cluster_volume_name_parse(NULL, id, node), -EINVAL);
        CHECK_EQ_INT(cluster_volume_name_parse("{\"id\":\"" ID "\"}", id, node), -EINVAL);
        CHECK_EQ_INT(cluster_volume_name_parse("{\"id\":\"" ID "\",\"node\":\"\"}", id, node),
                     -EINVAL);
        CHECK_EQ_INT(cluster_volume_name_parse("{\"id\":\"x\",\"node\":\"n1\"}", id, node),
                     -EINVAL);
        char big[200] = "{\"id\":\"" ID "\",\"node\":\"";
        size_t l = strlen(big);
        memset(big + l, 'a', 64);
        strcpy(big + l + 64, "\"}");
        CHECK_EQ_INT(cluster_volume_name_parse(big, id, node), -EINVAL);
        big[l + 63] = '"';
        strcpy(big + l + 64, "}");
        CHECK_EQ_INT(cluster_volume_name_parse(big, id, node), 0); /* 63: the limit */
        CHECK_EQ_INT(strlen(node), 63);
}

static void test_mount_names(void)
{
        const char *names[4];
        cJSON *b = cJSON_Parse("{\"volumeMounts\":[{\"name\":\"a\",\"path\":\"/x\"},"
                               "{\"name\":\"b\",\"path\":\"/y\"},{\"name\":\"a\",\"path\":\"/z\"},"
                               "{\"name\":\"bad name\",\"path\":\"/w\"},{\"path\":\"/v\"},7,"
                               "{\"name\":\"c\"},{\"name\":\"d\"},{\"name\":\"e\"}]}");
        CHECK_EQ_INT(cluster_volume_mount_names(b, names, 4), 4); /* bounded by max */
        CHECK_STREQ(names[0], "a");
        CHECK_STREQ(names[1], "b");
        CHECK_STREQ(names[2], "c");
        CHECK_STREQ(names[3], "d");
        cJSON_Delete(b);
        b = cJSON_Parse("{\"volumeMounts\":null,\"templateID\":\"base\"}");
        CHECK_EQ_INT(cluster_volume_mount_names(b, names, 4), 0);
        cJSON_Delete(b);
        b = cJSON_Parse("{\"volumeMounts\":{\"name\":\"a\"}}");
        CHECK_EQ_INT(cluster_volume_mount_names(b, names, 4), 0);
        cJSON_Delete(b);
        CHECK_EQ_INT(cluster_volume_mount_names(NULL, names, 4), 0);
}

int main(void)
{
        test_name_value();
        test_mount_names();
        return unit_finish("test-cluster-volumes");
}
