/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/owner-find.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/forward.h"
#include "e2b/files-signature.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"

/* The node a session id names: "<node>-<32 hex>" (false for a plain 32-hex id: a session of a
 * single node, or anything else). */
static bool session_node(const char *sid, char node[static CLUSTER_NAME_MAX + 1])
{
        size_t l = strlen(sid);
        if (l < 34 || l - 33 > CLUSTER_NAME_MAX || sid[l - 33] != '-' ||
            strspn(sid + l - 32, "0123456789abcdef") != 32)
                return false;
        memcpy(node, sid, l - 33);
        node[l - 33] = 0;
        return true;
}

bool owner_find_mcp(struct request *req, int *ret)
{
        struct cluster *c = req->srv->cluster;
        const char *sid = http_header(req, "Mcp-Session-Id");
        char node[CLUSTER_NAME_MAX + 1], addr[CLUSTER_ADDR_MAX + 1];
        if (!sid || !session_node(sid, node) || strcmp(node, cluster_self(c)) == 0)
                return false; /* here */
        if (cluster_node_addr(c, node, addr, sizeof(addr)) < 0) {
                /* its state was in that node's memory: gone with it (MCP's own 404: the client
                 * starts a new session) */
                *ret = v1_reply_error(req, 404, "not_found",
                                      "unknown or ended MCP session: its node %s is not live; "
                                      "initialize a new one",
                                      node);
                return true;
        }
        req->forwarded = true;
        *ret = forward_begin(req, addr, node);
        return true;
}

bool owner_find_signed_files(struct request *req, int *ret)
{
        struct cluster *c = req->srv->cluster;
        const char *q = strchr(req->target, '?');
        if (!files_auth_applies(req->method, req->path) || !q || !strstr(q, "signature="))
                return false;
        _cleanup_free_ char *probe = NULL;
        if (asprintf(&probe, CLUSTER_FILES_OWNER_PATH "%s", q) < 0) {
                *ret = -ENOMEM;
                return true;
        }
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        if (cluster_nodes(c, &nodes, &n) < 0)
                return false;
        bool taken = false;
        for (size_t i = 0; i < n && !taken; i++) {
                if (strcmp(nodes[i].name, cluster_self(c)) == 0)
                        continue;
                struct forward_answer a;
                (void)forward_buffered(NULL, nodes[i].addr, req->method, probe, NULL, 0, &a);
                _cleanup_json_ cJSON *o =
                    a.status == 200 ? cJSON_ParseWithLength(a.body ? a.body : "", a.len) : NULL;
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "sandboxID");
                if (cJSON_IsString(id) && strlen(id->valuestring) < sizeof(req->sandbox_id)) {
                        snprintf(req->sandbox_id, sizeof(req->sandbox_id), "%s", id->valuestring);
                        req->forwarded = true;
                        *ret = forward_begin(req, nodes[i].addr, nodes[i].name);
                        taken = true;
                }
                forward_answer_done(&a);
        }
        cluster_nodes_free(nodes, n);
        return taken;
}

int owner_find_answer_files(struct request *req)
{
        const char *q = strchr(req->target, '?');
        _cleanup_free_ char *target = NULL;
        if (asprintf(&target, "/files%s", q ? q : "") < 0)
                return -ENOMEM;
        char id[64];
        if (files_signature_find(req->srv->registry, req->method, "/files", target, id) < 0)
                return v1_reply_error(req, 404, "not_found", "no sandbox of this node signs it");
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "sandboxID", id))
                return -ENOMEM;
        return http_reply_cjson(req, 200, o, NULL, NULL);
}
