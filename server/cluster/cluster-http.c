/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/cluster-http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster-volumes.h"
#include "cluster/cluster.h"
#include "cluster/forward.h"
#include "cluster/hop-auth.h"
#include "cluster/owner-find.h"
#include "cluster/move.h"
#include "e2b/list-query.h"
#include "json-util.h"
#include "lifecycle/registry.h"
#include "lifecycle/sandbox.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"

/* An item of node's page says where it runs: the console's node column (an sbx extension the
 * SDKs ignore). */
static void tag_node(cJSON *item, const char *node)
{
        if (cJSON_IsObject(item) && !cJSON_GetObjectItemCaseSensitive(item, "node"))
                cJSON_AddStringToObject(item, "node", node);
}

/* The items of node's page (an array; anything else gives none) moved to all, each tagged. */
static void take_items(cJSON *all, cJSON *items, const char *node)
{
        cJSON *it;
        while (cJSON_IsArray(items) && (it = cJSON_DetachItemFromArray(items, 0))) {
                tag_node(it, node);
                cJSON_AddItemToArray(all, it);
        }
}

/* One item of a node's page, with its sort key. */
struct item {
        cJSON *json;
        int64_t started_us;
        const char *id;
};

static int cmp_items(const void *a, const void *b, void *order)
{
        const struct item *x = a, *y = b;
        return list_compare(*(const enum list_order *)order, x->started_us, x->id, y->started_us,
                            y->id);
}

/* Every live node's page (asked with CLUSTER_HOP_HEADER, so each answers its own sandboxes with
 * their start in microseconds), merged in the list's order and cut at the limit; the cursor of
 * the last item kept when more follow. */
static int aggregate_list(struct request *req)
{
        struct cluster *c = req->srv->cluster;
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        int r = cluster_nodes(c, &nodes, &n);
        if (r < 0)
                return http_reply_error(req, r, NULL, "out of memory");
        bool v2 = strncmp(req->path, "/v2/", 4) == 0;
        const char *lim = v2 ? http_arg(req, "limit") : NULL;
        const char *ord = v2 ? http_arg(req, "order") : NULL;
        unsigned limit = lim ? (unsigned)strtoul(lim, NULL, 10) : (v2 ? 100 : UINT32_MAX);
        enum list_order order = ord && strcmp(ord, "asc") == 0 ? LIST_ASC : LIST_DESC;
        _cleanup_json_ cJSON *all = cJSON_CreateArray();
        bool more = false, have_total = false;
        unsigned long long total = 0; /* X-Total-Running: every node's own count */
        for (size_t i = 0; all && i < n; i++) {
                struct forward_answer a;
                (void)forward_buffered(req, nodes[i].addr, "GET", req->target, NULL, 0, &a);
                if (a.status != 200) {
                        if (a.status >= 400 && a.status < 500) { /* the query: everyone's */
                                int st =
                                    http_reply_bytes(req, (unsigned)a.status, "application/json",
                                                     a.body ? a.body : "", a.len, NULL, NULL);
                                forward_answer_done(&a);
                                cluster_nodes_free(nodes, n);
                                return st;
                        }
                        log_warning("cluster: listing on node %s: %s", nodes[i].name,
                                    a.status ? "error answer" : "no answer");
                        forward_answer_done(&a);
                        continue;
                }
                cJSON *page = cJSON_ParseWithLength(a.body ? a.body : "", a.len);
                more |= a.next_token != NULL;
                if (a.total_running) {
                        have_total = true;
                        total += strtoull(a.total_running, NULL, 10);
                }
                take_items(all, page, nodes[i].name);
                cJSON_Delete(page);
                forward_answer_done(&a);
        }
        cluster_nodes_free(nodes, n);
        if (!all)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        size_t count = (size_t)cJSON_GetArraySize(all);
        _cleanup_free_ struct item *items = calloc(count ? count : 1, sizeof(*items));
        if (!items)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        size_t k = 0;
        cJSON *it;
        cJSON_ArrayForEach(it, all)
        {
                const cJSON *us = cJSON_GetObjectItemCaseSensitive(it, "startedAtUs");
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "sandboxID");
                if (!cJSON_IsString(id))
                        continue;
                items[k++] =
                    (struct item){.json = it,
                                  .started_us = cJSON_IsNumber(us) ? (int64_t)us->valuedouble : 0,
                                  .id = id->valuestring};
        }
        qsort_r(items, k, sizeof(*items), cmp_items, &order);
        _cleanup_json_ cJSON *out = cJSON_CreateArray();
        size_t take = MIN(k, (size_t)limit);
        more |= k > take;
        for (size_t i = 0; out && i < take; i++) {
                cJSON *copy = cJSON_Duplicate(items[i].json, 1);
                cJSON_DeleteItemFromObjectCaseSensitive(copy, "startedAtUs");
                cJSON_AddItemToArray(out, copy);
        }
        char next[LIST_CURSOR_MAX] = "";
        if (v2 && more && take > 0 &&
            list_cursor_encode(items[take - 1].started_us, items[take - 1].id, order, next) < 0)
                next[0] = 0;
        _cleanup_free_ char *text = out ? cJSON_PrintUnformatted(out) : NULL;
        if (!text)
                return http_reply_error(req, -ENOMEM, NULL, "out of memory");
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_COPY);
        if (!resp)
                return -ENOMEM;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        if (next[0])
                MHD_add_response_header(resp, "X-Next-Token", next);
        char tr[24];
        snprintf(tr, sizeof(tr), "%llu", total);
        if (have_total)
                MHD_add_response_header(resp, "X-Total-Running", tr);
        r = http_queue(req, 200, resp);
        MHD_destroy_response(resp);
        return r;
}

bool cluster_hop(struct request *req, int *ret)
{
        const char *hop = http_header(req, CLUSTER_HOP_HEADER);
        if (!hop)
                return false;
        int r = hop_auth_check(hop, req->method, req->target);
        if (r == 0) {
                req->from_node = true; /* answered here, whatever its row says */
                return false;
        }
        log_warning("cluster: refused a request with an invalid " CLUSTER_HOP_HEADER
                    " header (%s): %s %s",
                    hop_auth_strerror(r), req->method, req->path);
        if (route_errors_for_path(req->path) == ERRORS_NATIVE)
                *ret = v1_reply_error(req, 401, "unauthorized",
                                      CLUSTER_HOP_HEADER " is for sbxd nodes: %s",
                                      hop_auth_strerror(r));
        else
                *ret = http_reply_error(req, -EACCES, NULL,
                                        CLUSTER_HOP_HEADER " is for sbxd nodes: %s",
                                        hop_auth_strerror(r));
        return true;
}

/* The native list: every live node's {"sandboxes":[…]} (asked with CLUSTER_HOP_HEADER: its
 * own), joined. A node that does not answer is left out (logged), as for E2B's list. */
static int aggregate_native_list(struct request *req)
{
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        if (cluster_nodes(req->srv->cluster, &nodes, &n) < 0)
                return v1_reply_error(req, 500, NULL, "out of memory");
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON *all = o ? cJSON_AddArrayToObject(o, "sandboxes") : NULL;
        for (size_t i = 0; all && i < n; i++) {
                struct forward_answer a;
                (void)forward_buffered(req, nodes[i].addr, "GET", req->target, NULL, 0, &a);
                cJSON *page =
                    a.status == 200 ? cJSON_ParseWithLength(a.body ? a.body : "", a.len) : NULL;
                cJSON *items = cJSON_GetObjectItemCaseSensitive(page, "sandboxes");
                if (!cJSON_IsArray(items))
                        log_warning("cluster: listing on node %s: %s", nodes[i].name,
                                    a.status ? "error answer" : "no answer");
                take_items(all, items, nodes[i].name);
                cJSON_Delete(page);
                forward_answer_done(&a);
        }
        cluster_nodes_free(nodes, n);
        if (!all)
                return v1_reply_error(req, 500, NULL, "out of memory");
        return v1_reply_json(req, 200, o, NULL, NULL);
}

bool cluster_forward_sandbox(struct request *req, const char *id, int *ret)
{
        struct cluster *c = req->srv->cluster;
        if (req->from_node || !id[0])
                return false;
        struct sandbox *s = registry_get(req->srv->registry, id);
        if (s) {
                sandbox_unref(s);
                return false;
        }
        char node[CLUSTER_NAME_MAX + 1], addr[CLUSTER_ADDR_MAX + 1];
        enum cluster_owner o = cluster_owner(c, id, node, sizeof(node), addr, sizeof(addr));
        /* not in the cache: created elsewhere a moment ago, before the watch told us? */
        if (o == OWNER_UNKNOWN && cluster_lookup(c, id) == 0)
                o = cluster_owner(c, id, node, sizeof(node), addr, sizeof(addr));
        switch (o) {
        case OWNER_UNKNOWN:
        case OWNER_SELF:
                return false;
        case OWNER_LOST:
                snprintf(req->sandbox_id, sizeof(req->sandbox_id), "%s", id);
                *ret = forward_reply_lost(req, node, "stopped renewing its cluster lease");
                return true;
        case OWNER_REMOTE:
                break;
        }
        snprintf(req->sandbox_id, sizeof(req->sandbox_id), "%s", id);
        req->forwarded = true;
        *ret = forward_begin(req, addr, node);
        return true;
}

bool cluster_route(struct request *req, const struct route *rt, int *ret)
{
        if (req->from_node)
                return false;
        switch (rt->place) {
        case PLACE_LOCAL:
        case PLACE_CREATE: /* placed once the body is in: cluster_place_create() */
        case PLACE_CREATE_NATIVE:
        case PLACE_CREATE_VOLUME:
                return false;
        case PLACE_SANDBOX:
                return cluster_forward_sandbox(req, req->args.v[0], ret);
        case PLACE_VOLUME:
                return cluster_volumes_forward(req, req->args.v[0], ret);
        case PLACE_LIST:
                *ret = aggregate_list(req);
                return true;
        case PLACE_LIST_NATIVE:
                *ret = aggregate_native_list(req);
                return true;
        case PLACE_LIST_VOLUMES:
                *ret = cluster_volumes_list(req);
                return true;
        case PLACE_SESSION:
                return owner_find_mcp(req, ret);
        case PLACE_SIGNED_FILES:
                return owner_find_signed_files(req, ret);
        case PLACE_NODE_ONLY:
                *ret = v1_reply_error(req, 403, "forbidden",
                                      "a route between cluster nodes (they send %s)",
                                      CLUSTER_HOP_HEADER);
                return true;
        }
        return false;
}

/* The template a create asks for: E2B's templateID; the native API's template, "base" when
 * absent or null. NULL when not a string (the local handler refuses it). */
static const char *create_template(struct request *req, bool native)
{
        const cJSON *body = req->body ? req->body->json : NULL;
        if (!cJSON_IsObject(body))
                return NULL;
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(body, native ? "template" : "templateID");
        if (native && (!t || cJSON_IsNull(t)))
                return "base";
        return cJSON_IsString(t) ? t->valuestring : NULL;
}

int cluster_place_create(struct request *req)
{
        struct cluster *c = req->srv->cluster;
        enum route_place place = req->route->place;
        bool native = place == PLACE_CREATE_NATIVE;
        if (req->from_node)
                return 0;
        if (place == PLACE_CREATE_VOLUME)
                return cluster_volumes_place(req);
        const char *tmpl = place == PLACE_CREATE || native ? create_template(req, native) : NULL;
        if (!tmpl)
                return 0;
        int r;
        bool self = false, pinned = false;
        char addr[CLUSTER_ADDR_MAX + 1], msg[256];
        /* an E2B create naming volumes goes where they are */
        r = native ? 0 : cluster_volumes_pin(req, &pinned, &self, addr, sizeof(addr));
        if (r != 0)
                return r;
        if (!pinned)
                r = cluster_place(c, tmpl, &self, addr, sizeof(addr), msg, sizeof(msg));
        if (r < 0 && native)
                return v1_reply_error(req, 503, "unavailable", "%s", msg);
        if (r < 0)
                return http_reply_error(req, -EAGAIN, NULL, "%s", msg);
        if (self)
                return 0;
        struct forward_answer a;
        r = forward_buffered_body(req, addr, &a);
        if (r < 0 || a.status == 0) {
                forward_answer_done(&a);
                if (native)
                        return v1_reply_error(req, 503, "node_lost",
                                              "node lost: the node placed on (%s) did not answer",
                                              addr);
                return http_reply_error(req, -EHOSTUNREACH, NULL,
                                        "node lost: the node placed on (%s) did not answer", addr);
        }
        return forward_reply_answer(req, &a);
}

int cluster_hook_created(struct server *srv, const char *id)
{
        return cluster_map_sandbox(srv->cluster, id);
}

int cluster_handle_nodes(struct request *req)
{
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        if (!req->srv->cluster)
                return v1_reply_error(req, 404, "not_found", "this sbxd runs without --cluster");
        if (cluster_nodes(req->srv->cluster, &nodes, &n) < 0)
                return v1_reply_error(req, 500, NULL, "out of memory");
        _cleanup_json_ cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; arr && i < n; i++) {
                cJSON *o = cJSON_CreateObject();
                if (!o)
                        break;
                cJSON_AddStringToObject(o, "name", nodes[i].name);
                cJSON_AddStringToObject(o, "addr", nodes[i].addr);
                cJSON_AddNumberToObject(o, "capacity", nodes[i].capacity);
                cJSON_AddNumberToObject(o, "sandboxes", nodes[i].sandboxes);
                cJSON_AddNumberToObject(o, "inflight", nodes[i].inflight);
                cJSON_AddNumberToObject(o, "memoryMB", (double)nodes[i].memory_mb);
                cJSON_AddBoolToObject(o, "draining", nodes[i].draining);
                cJSON_AddBoolToObject(o, "self",
                                      strcmp(nodes[i].name, cluster_self(req->srv->cluster)) == 0);
                cJSON_AddItemToArray(arr, o);
        }
        cluster_nodes_free(nodes, n);
        return http_reply_cjson(req, 200, arr, NULL, NULL);
}

/* ?move=1 (or true), or a body {"move": true}. */
static bool drain_wants_move(struct request *req)
{
        const char *q = http_arg(req, "move");
        const cJSON *body = req->body ? req->body->json : NULL;
        return (q && (strcmp(q, "1") == 0 || strcmp(q, "true") == 0)) ||
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "move"));
}

int cluster_handle_drain(struct request *req)
{
        if (!req->srv->cluster)
                return v1_reply_error(req, 404, "not_found", "this sbxd runs without --cluster");
        const char *name = req->args.v[0];
        int r = cluster_set_drain(req->srv->cluster, name, strcmp(req->method, "DELETE") != 0);
        if (r < 0)
                return v1_reply_error(req, 503, "cluster_unavailable",
                                      "cluster store unavailable: %s", strerror(-r));
        if (strcmp(req->method, "DELETE") != 0 && drain_wants_move(req))
                return cluster_drain_move(req, name); /* cluster/move.h */
        return http_reply_204(req);
}
