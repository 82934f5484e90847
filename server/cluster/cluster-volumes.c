/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/cluster-volumes.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/etcd.h"
#include "cluster/forward.h"
#include "core/validate.h"
#include "json-util.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"

#define KEY_MAX 256

int cluster_volume_name_parse(const char *value, char id[static VOLUME_ID_LEN + 1],
                              char node[static CLUSTER_NAME_MAX + 1])
{
        _cleanup_json_ cJSON *o = value ? cJSON_Parse(value) : NULL;
        const cJSON *i = cJSON_GetObjectItemCaseSensitive(o, "id");
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "node");
        if (!cJSON_IsString(i) || !cJSON_IsString(n) || !volume_id_valid(i->valuestring) ||
            !n->valuestring[0] || strlen(n->valuestring) > CLUSTER_NAME_MAX)
                return -EINVAL;
        snprintf(id, VOLUME_ID_LEN + 1, "%s", i->valuestring);
        snprintf(node, CLUSTER_NAME_MAX + 1, "%s", n->valuestring);
        return 0;
}

char *cluster_volume_name_format(const char *id, const char *node)
{
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o || !cJSON_AddStringToObject(o, "id", id) ||
            !cJSON_AddStringToObject(o, "node", node))
                return NULL;
        return cJSON_PrintUnformatted(o);
}

size_t cluster_volume_mount_names(const cJSON *body, const char *names[], size_t max)
{
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(body, "volumeMounts"), *e;
        size_t n = 0;
        if (!cJSON_IsArray(a))
                return 0;
        cJSON_ArrayForEach(e, a)
        {
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
                if (!cJSON_IsString(name) || !volume_name_valid(name->valuestring))
                        continue;
                bool seen = false;
                for (size_t i = 0; i < n && !seen; i++)
                        seen = strcmp(names[i], name->valuestring) == 0;
                if (!seen && n < max)
                        names[n++] = name->valuestring;
        }
        return n;
}

/* etcd's value of key prefix + name into *ret: 0, -ENOENT, or etcd's error. */
static int get_under(struct etcd *e, const char *prefix, const char *name, char **ret)
{
        char key[KEY_MAX];
        snprintf(key, sizeof(key), "%s%s", prefix, name);
        return etcd_get(e, key, ret);
}

/* The node holding the volume named name (and its id): 0, -ENOENT, or etcd's error. */
static int name_node(struct etcd *e, const char *name, char id[static VOLUME_ID_LEN + 1],
                     char node[static CLUSTER_NAME_MAX + 1])
{
        _cleanup_free_ char *v = NULL;
        int r = get_under(e, CLUSTER_VOLUME_NAMES_KEY, name, &v);
        if (r < 0)
                return r;
        return cluster_volume_name_parse(v, id, node) < 0 ? -ENOENT : 0;
}

/* Volume id -> node, as etcd said: a volume never moves and its id (a random UUID) is never
 * reused, so an entry stays right for the volume's life; after its delete it sends a request
 * to the node that held it, which answers 404 as this node would. Replaced round-robin. */
static struct {
        char id[VOLUME_ID_LEN + 1];
        char node[CLUSTER_NAME_MAX + 1];
} cache[CLUSTER_VOLUME_CACHE];
static size_t cache_next;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static bool cache_get(const char *id, char node[static CLUSTER_NAME_MAX + 1])
{
        bool found = false;
        pthread_mutex_lock(&cache_lock);
        for (size_t i = 0; i < CLUSTER_VOLUME_CACHE && !found; i++)
                if (strcmp(cache[i].id, id) == 0) {
                        snprintf(node, CLUSTER_NAME_MAX + 1, "%s", cache[i].node);
                        found = true;
                }
        pthread_mutex_unlock(&cache_lock);
        return found;
}

static void cache_put(const char *id, const char *node)
{
        pthread_mutex_lock(&cache_lock);
        size_t k = cache_next++ % CLUSTER_VOLUME_CACHE;
        snprintf(cache[k].id, sizeof(cache[k].id), "%s", id);
        snprintf(cache[k].node, sizeof(cache[k].node), "%s", node);
        pthread_mutex_unlock(&cache_lock);
}

static int id_node(struct etcd *e, const char *id, char node[static CLUSTER_NAME_MAX + 1])
{
        if (cache_get(id, node))
                return 0;
        _cleanup_free_ char *v = NULL;
        int r = get_under(e, CLUSTER_VOLUMES_KEY, id, &v);
        if (r < 0)
                return r;
        snprintf(node, CLUSTER_NAME_MAX + 1, "%s", v);
        cache_put(id, node);
        return 0;
}

static int reply_unavailable(struct request *req, int r)
{
        return http_reply_error(req, -EAGAIN, NULL, "cluster store unavailable: %s",
                                strerror(r < 0 ? -r : r));
}

/* The volumes etcd names on a node that did not answer (lost): listed from their
 * volume-names/ keys, so the list shows every name that is taken. */
static void add_unanswered(struct request *req, const struct cluster_node *nodes,
                           const bool *answered, size_t n, cJSON *all)
{
        struct etcd_kv *kvs = NULL;
        size_t nk = 0;
        if (etcd_range_prefix(cluster_etcd(req->srv->cluster), CLUSTER_VOLUME_NAMES_KEY, &kvs, &nk,
                              NULL) < 0) {
                log_warning("cluster: listing volumes: etcd unavailable, lost nodes' left out");
                return;
        }
        size_t pl = strlen(CLUSTER_VOLUME_NAMES_KEY);
        for (size_t k = 0; k < nk; k++) {
                char id[VOLUME_ID_LEN + 1], node[CLUSTER_NAME_MAX + 1];
                if (cluster_volume_name_parse(kvs[k].value, id, node) < 0)
                        continue;
                bool heard = false;
                for (size_t i = 0; i < n && !heard; i++)
                        heard = answered[i] && strcmp(nodes[i].name, node) == 0;
                cJSON *o = heard ? NULL : cJSON_CreateObject();
                if (o && cJSON_AddStringToObject(o, "volumeID", id) &&
                    cJSON_AddStringToObject(o, "name", kvs[k].key + pl))
                        cJSON_AddItemToArray(all, o);
                else
                        cJSON_Delete(o);
        }
        etcd_kvs_free(kvs, nk);
}

/* GET /volumes: every live node's own volumes (asked with the hop header), in node order,
 * then those of nodes that did not answer, from etcd. */
static int aggregate_list(struct request *req)
{
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        if (cluster_nodes(req->srv->cluster, &nodes, &n) < 0)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        _cleanup_json_ cJSON *all = cJSON_CreateArray();
        _cleanup_free_ bool *answered = calloc(n ? n : 1, sizeof(*answered));
        for (size_t i = 0; all && answered && i < n; i++) {
                struct forward_answer a;
                (void)forward_buffered(req, nodes[i].addr, "GET", req->target, NULL, 0, &a);
                if (a.status >= 400 && a.status < 500) { /* the caller's key: everyone's */
                        int st = http_reply_bytes(req, (unsigned)a.status, "application/json",
                                                  a.body ? a.body : "", a.len, NULL, NULL);
                        forward_answer_done(&a);
                        cluster_nodes_free(nodes, n);
                        return st;
                }
                cJSON *page =
                    a.status == 200 ? cJSON_ParseWithLength(a.body ? a.body : "", a.len) : NULL;
                answered[i] = cJSON_IsArray(page);
                if (!answered[i])
                        log_warning("cluster: listing volumes on node %s: %s", nodes[i].name,
                                    a.status ? "error answer" : "no answer");
                cJSON *it;
                while (cJSON_IsArray(page) && (it = cJSON_DetachItemFromArray(page, 0)))
                        cJSON_AddItemToArray(all, it);
                cJSON_Delete(page);
                forward_answer_done(&a);
        }
        if (all && answered)
                add_unanswered(req, nodes, answered, n, all);
        cluster_nodes_free(nodes, n);
        if (!all || !answered)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        return http_reply_cjson(req, 200, all, NULL, NULL);
}

int cluster_volumes_list(struct request *req)
{
        return aggregate_list(req);
}

bool cluster_volumes_forward(struct request *req, const char *id, int *ret)
{
        struct cluster *c = req->srv->cluster;
        char node[CLUSTER_NAME_MAX + 1], addr[CLUSTER_ADDR_MAX + 1];
        struct volume_info v;
        if (!volume_id_valid(id) || volume_get(req->srv->volumes, id, &v) == 0)
                return false; /* not a volume id, or this node's: answered here */
        int r = id_node(cluster_etcd(c), id, node);
        if (r == -ENOENT || (r == 0 && strcmp(node, cluster_self(c)) == 0))
                return false; /* no such volume: the local 404 */
        if (r < 0) {
                *ret = reply_unavailable(req, r);
                return true;
        }
        if (cluster_node_addr(c, node, addr, sizeof(addr)) < 0) {
                *ret = http_reply_error(req, -EAGAIN, NULL,
                                        "node lost: volume %s lives on node %s, which is not live",
                                        id, node);
                return true;
        }
        req->forwarded = true;
        *ret = forward_begin(req, addr, node);
        return true;
}

/* The number of volumes of each node in nodes (etcd's volumes/ keys). */
static int count_volumes(struct etcd *e, const struct cluster_node *nodes, size_t n,
                         unsigned *counts)
{
        struct etcd_kv *kvs = NULL;
        size_t nk = 0;
        int r = etcd_range_prefix(e, CLUSTER_VOLUMES_KEY, &kvs, &nk, NULL);
        if (r < 0)
                return r;
        for (size_t k = 0; k < nk; k++)
                for (size_t i = 0; i < n; i++)
                        if (strcmp(kvs[k].value, nodes[i].name) == 0)
                                counts[i]++;
        etcd_kvs_free(kvs, nk);
        return 0;
}

/* Forward a buffered POST of req's body to addr and pass the answer back. */
static int forward_create(struct request *req, const char *addr)
{
        struct forward_answer a;
        int r = forward_buffered_body(req, addr, &a);
        if (r < 0 || a.status == 0) {
                forward_answer_done(&a);
                return http_reply_error(req, -EAGAIN, NULL,
                                        "node lost: the node placed on (%s) did not answer", addr);
        }
        return forward_reply_answer(req, &a);
}

int cluster_volumes_place(struct request *req)
{
        struct cluster *c = req->srv->cluster;
        const cJSON *body = req->body ? req->body->json : NULL;
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(body, "name");
        if (!cJSON_IsString(name) || !volume_name_valid(name->valuestring))
                return 0; /* the local 400 */
        char id[VOLUME_ID_LEN + 1], node[CLUSTER_NAME_MAX + 1];
        struct etcd *e = cluster_etcd(c);
        int r = name_node(e, name->valuestring, id, node);
        if (r == 0) /* E2B answers 400 here, not 409 */
                return http_reply_error(req, -EINVAL, NULL, "Volume with name '%s' already exists",
                                        name->valuestring);
        if (r != -ENOENT)
                return reply_unavailable(req, r);
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        if (cluster_nodes(c, &nodes, &n) < 0)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        _cleanup_free_ unsigned *counts = calloc(n ? n : 1, sizeof(*counts));
        _cleanup_free_ size_t *idx = calloc(n ? n : 1, sizeof(*idx));
        r = counts && idx ? count_volumes(e, nodes, n, counts) : -ENOMEM;
        if (r < 0) {
                cluster_nodes_free(nodes, n);
                return reply_unavailable(req, r);
        }
        /* undrained and below capacity (its sandboxes must run there); else undrained */
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
                if (!nodes[i].draining &&
                    nodes[i].sandboxes + nodes[i].inflight < nodes[i].capacity)
                        idx[m++] = i;
        for (size_t i = 0; i < n && m == 0; i++)
                if (!nodes[i].draining)
                        idx[m++] = i;
        if (m == 0) {
                cluster_nodes_free(nodes, n);
                return http_reply_error(req, -EAGAIN, NULL,
                                        "no node can take a volume: every node is drained");
        }
        /* two distinct undrained nodes at random; fewer volumes, then fewer sandboxes, wins */
        uint32_t rnd[2];
        (void)random_bytes(rnd, sizeof(rnd));
        size_t a = idx[rnd[0] % m], b = m > 1 ? idx[(rnd[0] % m + 1 + rnd[1] % (m - 1)) % m] : a;
        unsigned la = nodes[a].sandboxes + nodes[a].inflight;
        unsigned lb = nodes[b].sandboxes + nodes[b].inflight;
        size_t pick = counts[b] < counts[a] || (counts[b] == counts[a] && lb < la) ? b : a;
        bool self = strcmp(nodes[pick].name, cluster_self(c)) == 0;
        char addr[CLUSTER_ADDR_MAX + 1];
        snprintf(addr, sizeof(addr), "%s", nodes[pick].addr);
        cluster_nodes_free(nodes, n);
        return self ? 0 : forward_create(req, addr);
}

/* A create refused, in E2B's {code, message}. */
static int refuse(struct request *req, unsigned status, const char *msg)
{
        return http_reply_error(req, status == 400 ? -EINVAL : -EAGAIN, NULL, "%s", msg);
}

/* Whether the node holding the create's volumes can take it: 0 with addr, or the refusal. */
static int check_node(struct request *req, const char *vol, const char *node, char *addr,
                      size_t addr_len)
{
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        if (cluster_nodes(req->srv->cluster, &nodes, &n) < 0)
                return refuse(req, 503, "out of memory");
        const struct cluster_node *it = NULL;
        for (size_t i = 0; i < n; i++)
                if (strcmp(nodes[i].name, node) == 0)
                        it = &nodes[i];
        /* without the template, that node pulls it from one that has it (layer-pull.h) */
        char msg[512] = "";
        if (!it)
                snprintf(msg, sizeof(msg),
                         "node lost: volume '%s' lives on node %s, which is not live", vol, node);
        else if (it->draining)
                snprintf(msg, sizeof(msg),
                         "volume '%s' lives on node %s, which is drained: it takes no new "
                         "sandboxes",
                         vol, node);
        else if (it->sandboxes + it->inflight >= it->capacity)
                snprintf(msg, sizeof(msg),
                         "volume '%s' lives on node %s, which is full (%u sandboxes of %u)", vol,
                         node, it->sandboxes + it->inflight, it->capacity);
        else
                snprintf(addr, addr_len, "%s", it->addr);
        cluster_nodes_free(nodes, n);
        return msg[0] ? refuse(req, 503, msg) : 0;
}

int cluster_volumes_pin(struct request *req, bool *ret_pinned, bool *ret_self, char *addr,
                        size_t addr_len)
{
        struct cluster *c = req->srv->cluster;
        *ret_pinned = *ret_self = false;
        const char *names[SANDBOX_MAX_VOLUME_MOUNTS];
        size_t n = cluster_volume_mount_names(req->body ? req->body->json : NULL, names,
                                              ELEMENTSOF(names));
        const char *first = NULL;
        char node[CLUSTER_NAME_MAX + 1] = "";
        for (size_t i = 0; i < n; i++) {
                char id[VOLUME_ID_LEN + 1], nd[CLUSTER_NAME_MAX + 1];
                int r = name_node(cluster_etcd(c), names[i], id, nd);
                if (r == -ENOENT)
                        continue; /* unknown: the node that takes the create says so */
                if (r < 0) {
                        char msg[256];
                        snprintf(msg, sizeof(msg), "cluster store unavailable: %s", strerror(-r));
                        return refuse(req, 503, msg);
                }
                if (!first) {
                        first = names[i];
                        snprintf(node, sizeof(node), "%s", nd);
                } else if (strcmp(nd, node) != 0) {
                        char msg[512];
                        snprintf(msg, sizeof(msg),
                                 "invalid mounts: volumes '%s' (node %s) and '%s' (node %s) "
                                 "live on different nodes; a sandbox mounts volumes of one "
                                 "node only",
                                 first, node, names[i], nd);
                        return refuse(req, 400, msg);
                }
        }
        if (!first)
                return 0;
        int st = check_node(req, first, node, addr, addr_len);
        if (st != 0)
                return st;
        *ret_pinned = true;
        *ret_self = strcmp(node, cluster_self(c)) == 0;
        return 0;
}

int cluster_hook_volume_created(struct server *srv, const char *id, const char *name)
{
        struct cluster *c = srv->cluster;
        struct etcd *e = cluster_etcd(c);
        char key[KEY_MAX], vkey[KEY_MAX], got[VOLUME_ID_LEN + 1], node[CLUSTER_NAME_MAX + 1];
        snprintf(key, sizeof(key), CLUSTER_VOLUME_NAMES_KEY "%s", name);
        snprintf(vkey, sizeof(vkey), CLUSTER_VOLUMES_KEY "%s", id);
        _cleanup_free_ char *value = cluster_volume_name_format(id, cluster_self(c));
        if (!value)
                return -ENOMEM;
        int r = etcd_put_absent(e, key, value); /* the name, unless another node has it */
        if (r >= 0)
                r = name_node(e, name, got, node);
        if (r < 0)
                return r == -ENOENT ? -EHOSTUNREACH : r;
        if (strcmp(got, id) != 0)
                return -EEXIST;
        r = etcd_put(e, vkey, cluster_self(c), 0);
        if (r < 0) {
                (void)etcd_delete(e, key);
                return r;
        }
        return 0;
}

void cluster_hook_volume_deleted(struct server *srv, const char *id, const char *name)
{
        struct etcd *e = cluster_etcd(srv->cluster);
        char key[KEY_MAX], got[VOLUME_ID_LEN + 1], node[CLUSTER_NAME_MAX + 1];
        snprintf(key, sizeof(key), CLUSTER_VOLUME_NAMES_KEY "%s", name);
        int r = name_node(e, name, got, node);
        if (r == 0 && strcmp(got, id) == 0)
                r = etcd_delete(e, key);
        if (r < 0 && r != -ENOENT)
                log_warning("cluster: volume %s ('%s'): its name stays in etcd until this node "
                            "restarts: %s",
                            id, name, strerror(-r));
        snprintf(key, sizeof(key), CLUSTER_VOLUMES_KEY "%s", id);
        r = etcd_delete(e, key);
        if (r < 0)
                log_warning("cluster: volume %s: its mapping stays in etcd until this node "
                            "restarts: %s",
                            id, strerror(-r));
}

int cluster_hook_may_create(struct server *srv, char *msg, size_t msg_len)
{
        struct cluster *c = srv->cluster;
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        if (cluster_nodes(c, &nodes, &n) < 0)
                return -ENOMEM;
        bool drained = false;
        for (size_t i = 0; i < n; i++)
                drained |= strcmp(nodes[i].name, cluster_self(c)) == 0 && nodes[i].draining;
        cluster_nodes_free(nodes, n);
        if (!drained)
                return 0;
        snprintf(msg, msg_len,
                 "node %s is drained: it creates no new sandboxes; start a new MCP session on "
                 "another node",
                 cluster_self(c));
        return -EBUSY;
}

static bool local(const struct volume_info *all, size_t n, const char *id)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(all[i].id, id) == 0)
                        return true;
        return false;
}

void cluster_volumes_register(struct cluster *c, struct server *srv)
{
        struct etcd *e = cluster_etcd(c);
        const char *self = cluster_self(c);
        _cleanup_free_ struct volume_info *all = NULL;
        size_t n = 0;
        if (!srv->volumes || volume_list(srv->volumes, &all, &n) < 0)
                return;
        size_t ok = 0;
        for (size_t i = 0; i < n; i++) {
                char key[KEY_MAX], got[VOLUME_ID_LEN + 1], node[CLUSTER_NAME_MAX + 1];
                snprintf(key, sizeof(key), CLUSTER_VOLUME_NAMES_KEY "%s", all[i].name);
                _cleanup_free_ char *value = cluster_volume_name_format(all[i].id, self);
                int r = value ? etcd_put_absent(e, key, value) : -ENOMEM;
                if (r >= 0)
                        r = name_node(e, all[i].name, got, node);
                if (r == 0 && strcmp(got, all[i].id) != 0)
                        log_warning("cluster: volume %s ('%s'): the name is another volume's in "
                                    "the cluster (%s on node %s); this one is reached by id only",
                                    all[i].id, all[i].name, got, node);
                snprintf(key, sizeof(key), CLUSTER_VOLUMES_KEY "%s", all[i].id);
                if (r >= 0)
                        r = etcd_put(e, key, self, 0);
                if (r < 0)
                        log_warning("cluster: volume %s: not recorded in etcd: %s", all[i].id,
                                    strerror(-r));
                else
                        ok++;
        }
        /* entries of this node whose volume is gone */
        struct etcd_kv *kvs = NULL;
        size_t nk = 0;
        size_t pl = strlen(CLUSTER_VOLUMES_KEY);
        if (etcd_range_prefix(e, CLUSTER_VOLUMES_KEY, &kvs, &nk, NULL) >= 0)
                for (size_t k = 0; k < nk; k++)
                        if (strcmp(kvs[k].value, self) == 0 && !local(all, n, kvs[k].key + pl))
                                (void)etcd_delete(e, kvs[k].key);
        etcd_kvs_free(kvs, nk);
        kvs = NULL;
        nk = 0;
        if (etcd_range_prefix(e, CLUSTER_VOLUME_NAMES_KEY, &kvs, &nk, NULL) >= 0)
                for (size_t k = 0; k < nk; k++) {
                        char id[VOLUME_ID_LEN + 1], node[CLUSTER_NAME_MAX + 1];
                        if (cluster_volume_name_parse(kvs[k].value, id, node) == 0 &&
                            strcmp(node, self) == 0 && !local(all, n, id))
                                (void)etcd_delete(e, kvs[k].key);
                }
        etcd_kvs_free(kvs, nk);
        log_info("cluster: %zu of %zu volume(s) recorded in etcd", ok, n);
}
