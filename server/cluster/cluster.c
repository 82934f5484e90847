/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/cluster.h"

#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "buf.h"
#include "cluster/etcd.h"
#include "cluster/hop-auth.h"
#include "http/route.h"
#include "json-util.h"
#include "lifecycle/lifecycle-state.h"
#include "lifecycle/registry.h"
#include "lifecycle/sandbox.h"
#include "log.h"
#include "macros.h"
#include "random-util.h"
#include "time-util.h"

struct map_entry {
        char id[ROUTE_ID_MAX];
        char node[CLUSTER_NAME_MAX + 1];
};

struct cluster {
        struct server *srv;
        struct etcd *etcd;
        char name[CLUSTER_NAME_MAX + 1];
        char addr[CLUSTER_ADDR_MAX + 1];
        int64_t lease;
        bool holds_name;      /* nodes/<name> is this process's (under its lease) */
        bool told_taken;      /* the "name held by another node" error was logged */
        int64_t last_ok_ms;   /* __atomic: the last beat etcd took */
        pthread_mutex_t lock; /* nodes, map */
        struct cluster_node *nodes;
        size_t n_nodes;
        struct map_entry *map;
        size_t n_map, cap_map;
        pthread_t beat, watch;
        bool beat_started, watch_started;
        bool stop; /* __atomic */
        pthread_mutex_t stop_lock;
        pthread_cond_t stop_cond;
};

const char *cluster_self(const struct cluster *c)
{
        return c->name;
}

void cluster_nodes_free(struct cluster_node *n, size_t count)
{
        for (size_t i = 0; i < count; i++)
                free(n[i].templates);
        free(n);
}

/* ---- the map ---- */

static ssize_t map_find_locked(struct cluster *c, const char *id)
{
        for (size_t i = 0; i < c->n_map; i++)
                if (strcmp(c->map[i].id, id) == 0)
                        return (ssize_t)i;
        return -1;
}

static void map_set_locked(struct cluster *c, const char *id, const char *node)
{
        if (strlen(id) >= ROUTE_ID_MAX || strlen(node) > CLUSTER_NAME_MAX)
                return;
        ssize_t i = map_find_locked(c, id);
        if (!node[0]) {
                if (i >= 0)
                        c->map[i] = c->map[--c->n_map];
                return;
        }
        if (i < 0) {
                if (c->n_map == c->cap_map) {
                        size_t cap = MAX(c->cap_map * 2, (size_t)64);
                        struct map_entry *m = realloc(c->map, cap * sizeof(*m));
                        if (!m)
                                return;
                        c->map = m;
                        c->cap_map = cap;
                }
                i = (ssize_t)c->n_map++;
                snprintf(c->map[i].id, sizeof(c->map[i].id), "%s", id);
        }
        snprintf(c->map[i].node, sizeof(c->map[i].node), "%s", node);
}

static void on_map_event(void *ctx, const char *key, const char *value, int64_t rev)
{
        struct cluster *c = ctx;
        const char *id = key + strlen(CLUSTER_PREFIX "sandboxes/");
        pthread_mutex_lock(&c->lock);
        map_set_locked(c, id, value ? value : "");
        pthread_mutex_unlock(&c->lock);
}

static int load_map(struct cluster *c, int64_t *ret_rev)
{
        struct etcd_kv *kvs = NULL;
        size_t n = 0;
        int r = etcd_range_prefix(c->etcd, CLUSTER_PREFIX "sandboxes/", &kvs, &n, ret_rev);
        if (r < 0)
                return r;
        pthread_mutex_lock(&c->lock);
        c->n_map = 0;
        for (size_t i = 0; i < n; i++)
                map_set_locked(c, kvs[i].key + strlen(CLUSTER_PREFIX "sandboxes/"), kvs[i].value);
        pthread_mutex_unlock(&c->lock);
        etcd_kvs_free(kvs, n);
        return 0;
}

static bool stopping(struct cluster *c)
{
        return __atomic_load_n(&c->stop, __ATOMIC_RELAXED);
}

static void nap(struct cluster *c, int ms)
{
        struct timespec ts = timespec_in_ms(CLOCK_REALTIME, ms);
        pthread_mutex_lock(&c->stop_lock);
        if (!stopping(c))
                pthread_cond_timedwait(&c->stop_cond, &c->stop_lock, &ts);
        pthread_mutex_unlock(&c->stop_lock);
}

static void *watch_main(void *p)
{
        struct cluster *c = p;
        while (!stopping(c)) {
                int64_t rev = 0;
                int r = load_map(c, &rev);
                if (r >= 0)
                        r = etcd_watch_prefix(c->etcd, CLUSTER_PREFIX "sandboxes/", rev + 1,
                                              on_map_event, c, &c->stop);
                if (r < 0 && !stopping(c)) {
                        log_debug("cluster: sandbox map watch: %s", strerror(-r));
                        nap(c, 500);
                }
        }
        return NULL;
}

/* ---- this node's record ---- */

static char *templates_of(const char *state_dir)
{
        char path[4096];
        snprintf(path, sizeof(path), "%s/templates", state_dir);
        DIR *d = opendir(path);
        struct buf b = {};
        (void)buf_adds(&b, ",");
        unsigned n = 0;
        if (d) {
                struct dirent *de;
                while ((de = readdir(d)) && n < CLUSTER_MAX_TEMPLATES) {
                        if (de->d_name[0] == '.')
                                continue;
                        (void)buf_printf(&b, "%s,", de->d_name);
                        n++;
                }
                closedir(d);
        }
        return buf_steal(&b);
}

static char *self_record(struct cluster *c)
{
        struct server *srv = c->srv;
        struct sandbox **all = NULL;
        size_t n = 0;
        uint64_t mem = 0;
        if (registry_list(srv->registry, &all, &n) >= 0) {
                for (size_t i = 0; i < n; i++) {
                        mem += all[i]->memory_mb;
                        sandbox_unref(all[i]);
                }
                free(all);
        }
        _cleanup_free_ char *templates = templates_of(srv->config->state_dir);
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        if (!o || !templates)
                return NULL;
        cJSON_AddStringToObject(o, "name", c->name);
        cJSON_AddStringToObject(o, "addr", c->addr);
        cJSON_AddNumberToObject(o, "capacity", srv->config->max_sandboxes);
        cJSON_AddNumberToObject(o, "sandboxes", (double)n);
        cJSON_AddNumberToObject(o, "memoryMB", (double)mem);
        cJSON_AddNumberToObject(o, "inflight", lifecycle_starting(srv));
        cJSON_AddStringToObject(o, "templates", templates);
        return cJSON_PrintUnformatted(o);
}

static unsigned unum(const cJSON *o, const char *name)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
        return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (unsigned)v->valuedouble : 0;
}

/* nodes/ and drain/ into the node list; kept as it was when etcd does not answer. */
static int load_nodes(struct cluster *c)
{
        struct etcd_kv *kvs = NULL, *drains = NULL;
        size_t n = 0, nd = 0;
        int r = etcd_range_prefix(c->etcd, CLUSTER_PREFIX "nodes/", &kvs, &n, NULL);
        if (r >= 0)
                r = etcd_range_prefix(c->etcd, CLUSTER_PREFIX "drain/", &drains, &nd, NULL);
        if (r < 0) {
                etcd_kvs_free(kvs, n);
                return r;
        }
        struct cluster_node *nodes = calloc(n ? n : 1, sizeof(*nodes));
        size_t got = 0;
        for (size_t i = 0; nodes && i < n && got < CLUSTER_MAX_NODES; i++) {
                _cleanup_json_ cJSON *o = cJSON_Parse(kvs[i].value);
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
                const cJSON *addr = cJSON_GetObjectItemCaseSensitive(o, "addr");
                const cJSON *tp = cJSON_GetObjectItemCaseSensitive(o, "templates");
                if (!cJSON_IsString(name) || !cJSON_IsString(addr) || !cJSON_IsString(tp) ||
                    strlen(name->valuestring) > CLUSTER_NAME_MAX ||
                    strlen(addr->valuestring) > CLUSTER_ADDR_MAX)
                        continue;
                struct cluster_node *x = &nodes[got];
                snprintf(x->name, sizeof(x->name), "%s", name->valuestring);
                snprintf(x->addr, sizeof(x->addr), "%s", addr->valuestring);
                x->capacity = unum(o, "capacity");
                x->sandboxes = unum(o, "sandboxes");
                x->inflight = unum(o, "inflight");
                x->memory_mb = unum(o, "memoryMB");
                x->templates = strdup(tp->valuestring);
                char dk[200];
                snprintf(dk, sizeof(dk), CLUSTER_PREFIX "drain/%s", x->name);
                for (size_t k = 0; k < nd; k++)
                        if (strcmp(drains[k].key, dk) == 0)
                                x->draining = true;
                if (x->templates)
                        got++;
        }
        etcd_kvs_free(kvs, n);
        etcd_kvs_free(drains, nd);
        if (!nodes)
                return -ENOMEM;
        pthread_mutex_lock(&c->lock);
        struct cluster_node *old = c->nodes;
        size_t old_n = c->n_nodes;
        c->nodes = nodes;
        c->n_nodes = got;
        pthread_mutex_unlock(&c->lock);
        cluster_nodes_free(old, old_n);
        return 0;
}

/* Map every local sandbox to this node (a node that comes back re-adopts its sandboxes and
 * says so), and drop the mappings of this node's sandboxes that are gone. */
static void reconcile(struct cluster *c)
{
        struct sandbox **all = NULL;
        size_t n = 0;
        if (registry_list(c->srv->registry, &all, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                if (__atomic_load_n(&all[i]->moved, __ATOMIC_ACQUIRE))
                        continue; /* moving to another node (move.h): its mapping is the target's */
                pthread_mutex_lock(&c->lock);
                ssize_t k = map_find_locked(c, all[i]->id);
                bool mine = k >= 0 && strcmp(c->map[k].node, c->name) == 0;
                pthread_mutex_unlock(&c->lock);
                if (!mine)
                        (void)cluster_map_sandbox(c, all[i]->id);
        }
        /* gone: mapped here, not in the registry */
        char gone[64][ROUTE_ID_MAX];
        size_t ng = 0;
        pthread_mutex_lock(&c->lock);
        for (size_t k = 0; k < c->n_map && ng < ELEMENTSOF(gone); k++) {
                if (strcmp(c->map[k].node, c->name) != 0)
                        continue;
                bool local = false;
                for (size_t i = 0; i < n && !local; i++)
                        local = strcmp(all[i]->id, c->map[k].id) == 0;
                if (!local)
                        snprintf(gone[ng++], ROUTE_ID_MAX, "%s", c->map[k].id);
        }
        pthread_mutex_unlock(&c->lock);
        for (size_t i = 0; i < n; i++)
                sandbox_unref(all[i]);
        free(all);
        for (size_t i = 0; i < ng; i++) {
                struct sandbox *s = registry_get(c->srv->registry, gone[i]);
                if (s) { /* registered since the list was taken */
                        sandbox_unref(s);
                        continue;
                }
                char key[200];
                snprintf(key, sizeof(key), CLUSTER_PREFIX "sandboxes/%.63s", gone[i]);
                (void)etcd_delete(c->etcd, key);
        }
}

/* One beat: the lease (a new one after it expired), this node's record, the node list. */
static int beat_once(struct cluster *c)
{
        int r = 0;
        if (c->lease) {
                r = etcd_lease_keepalive(c->etcd, c->lease);
                if (r == -ENOENT) {
                        log_warning("cluster: lease of node %s expired: registering again",
                                    c->name);
                        c->lease = 0;
                }
        }
        bool fresh = !c->lease;
        if (!c->lease) {
                r = etcd_lease_grant(c->etcd, CLUSTER_LEASE_TTL_S, &c->lease);
                if (r < 0)
                        return r;
        }
        _cleanup_free_ char *rec = self_record(c);
        char key[200];
        snprintf(key, sizeof(key), CLUSTER_PREFIX "nodes/%s", c->name);
        /* The record is claimed, never overwritten: under our own lease, or when nobody holds
         * the name (a new lease, or our record was deleted). Two nodes with one name (hosts
         * cloned from one image share their host name) would otherwise overwrite each other
         * and each take the other's sandboxes for its own. */
        bool put = false;
        r = rec ? etcd_put_claim(c->etcd, key, rec, c->lease, fresh ? 0 : c->lease, &put) : -ENOMEM;
        if (r >= 0 && !put && !fresh)
                r = etcd_put_claim(c->etcd, key, rec, c->lease, 0, &put);
        if (r < 0)
                return r;
        c->holds_name = put;
        if (!put) {
                if (!c->told_taken && c->beat_started)
                        log_error("cluster: node name %s is held by another live node: this node "
                                  "is no longer registered (give each node its own --node-name)",
                                  c->name);
                c->told_taken = true;
                return -EADDRINUSE;
        }
        c->told_taken = false;
        __atomic_store_n(&c->last_ok_ms, now_ms(), __ATOMIC_RELAXED);
        r = load_nodes(c);
        if (r >= 0)
                reconcile(c);
        return r;
}

/* The first registration. A record of this name may be the last run of this same node,
 * killed less than a lease ago: it goes when its lease expires, so the claim is retried for
 * that long; a name still held then belongs to another live node, and this one refuses to
 * start, naming it (server/cluster/README.md "Nodes"). */
static int claim_name(struct cluster *c)
{
        int64_t end = now_ms() + (CLUSTER_LEASE_TTL_S + 2) * 1000;
        for (;;) {
                int r = beat_once(c);
                if (r != -EADDRINUSE)
                        return r;
                if (now_ms() >= end) {
                        char key[200], addr[CLUSTER_ADDR_MAX + 1] = "?";
                        _cleanup_free_ char *v = NULL;
                        snprintf(key, sizeof(key), CLUSTER_PREFIX "nodes/%s", c->name);
                        if (etcd_get(c->etcd, key, &v) >= 0) {
                                _cleanup_json_ cJSON *o = cJSON_Parse(v);
                                const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "addr");
                                if (cJSON_IsString(a))
                                        snprintf(addr, sizeof(addr), "%s", a->valuestring);
                        }
                        log_error("cluster: node name %s is held by another live node (at %s): "
                                  "two nodes cannot share a name; give this one --node-name",
                                  c->name, addr);
                        return r;
                }
                nap(c, 500);
        }
}

static void *beat_main(void *p)
{
        struct cluster *c = p;
        while (!stopping(c)) {
                int r = beat_once(c);
                if (r < 0)
                        log_debug("cluster: beat: %s", strerror(-r));
                nap(c, CLUSTER_BEAT_MS);
        }
        return NULL;
}

int cluster_start(struct server *srv, const char *etcd, const char *name, const char *advertise,
                  struct cluster **ret)
{
        if (strlen(name) > CLUSTER_NAME_MAX || strlen(advertise) > CLUSTER_ADDR_MAX)
                return -ENAMETOOLONG;
        curl_global_init(CURL_GLOBAL_DEFAULT);
        struct cluster *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->srv = srv;
        snprintf(c->name, sizeof(c->name), "%s", name);
        snprintf(c->addr, sizeof(c->addr), "%s", advertise);
        pthread_mutex_init(&c->lock, NULL);
        pthread_mutex_init(&c->stop_lock, NULL);
        pthread_cond_init(&c->stop_cond, NULL);
        int r = etcd_new(etcd, &c->etcd);
        if (r < 0) {
                cluster_stop(c);
                return r;
        }
        int64_t rev;
        r = hop_auth_load(c->etcd,
                          CLUSTER_PREFIX "hop-secret"); /* before any request sent or taken */
        if (r >= 0)
                r = load_map(c, &rev);
        if (r >= 0)
                r = claim_name(c);
        if (r < 0) {
                cluster_stop(c);
                return r;
        }
        r = -pthread_create(&c->beat, NULL, beat_main, c);
        c->beat_started = r == 0;
        if (r == 0)
                r = -pthread_create(&c->watch, NULL, watch_main, c);
        c->watch_started = r == 0;
        if (r < 0) {
                cluster_stop(c);
                return r;
        }
        log_info("cluster: node %s at %s registered (%zu node(s), %zu mapped sandbox(es))", c->name,
                 c->addr, c->n_nodes, c->n_map);
        *ret = c;
        return 0;
}

void cluster_stop(struct cluster *c)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->stop_lock);
        __atomic_store_n(&c->stop, true, __ATOMIC_RELAXED);
        pthread_cond_broadcast(&c->stop_cond);
        pthread_mutex_unlock(&c->stop_lock);
        if (c->beat_started)
                pthread_join(c->beat, NULL);
        if (c->watch_started)
                pthread_join(c->watch, NULL);
        if (c->etcd && c->lease && c->holds_name) {
                /* a clean stop: the others stop placing here at once; the mappings stay
                 * (the sandboxes keep running and are adopted at the next start) */
                char key[200];
                snprintf(key, sizeof(key), CLUSTER_PREFIX "nodes/%s", c->name);
                (void)etcd_delete(c->etcd, key);
        }
        etcd_free(c->etcd);
        cluster_nodes_free(c->nodes, c->n_nodes);
        free(c->map);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

static const struct cluster_node *node_locked(struct cluster *c, const char *name)
{
        for (size_t i = 0; i < c->n_nodes; i++)
                if (strcmp(c->nodes[i].name, name) == 0)
                        return &c->nodes[i];
        return NULL;
}

enum cluster_owner cluster_owner(struct cluster *c, const char *id, char *node, size_t node_len,
                                 char *addr, size_t addr_len)
{
        enum cluster_owner o = OWNER_UNKNOWN;
        pthread_mutex_lock(&c->lock);
        ssize_t k = map_find_locked(c, id);
        if (k >= 0) {
                snprintf(node, node_len, "%s", c->map[k].node);
                const struct cluster_node *n = node_locked(c, c->map[k].node);
                if (strcmp(c->map[k].node, c->name) == 0)
                        o = OWNER_SELF;
                else if (n) {
                        o = OWNER_REMOTE;
                        snprintf(addr, addr_len, "%s", n->addr);
                } else
                        o = OWNER_LOST;
        }
        pthread_mutex_unlock(&c->lock);
        return o;
}

int cluster_lookup(struct cluster *c, const char *id)
{
        char key[200];
        snprintf(key, sizeof(key), CLUSTER_PREFIX "sandboxes/%s", id);
        _cleanup_free_ char *node = NULL;
        int r = etcd_get(c->etcd, key, &node);
        if (r < 0)
                return r;
        pthread_mutex_lock(&c->lock);
        map_set_locked(c, id, node);
        pthread_mutex_unlock(&c->lock);
        return 0;
}

static bool has_template(const struct cluster_node *n, const char *tmpl)
{
        char want[300];
        size_t l = strcspn(tmpl, ":"); /* a tag names the template too */
        snprintf(want, sizeof(want), ",%.*s,", (int)MIN(l, (size_t)250), tmpl);
        return strstr(n->templates, want) != NULL;
}

static bool can_take(const struct cluster_node *n)
{
        return !n->draining && n->sandboxes + n->inflight < n->capacity;
}

static bool eligible(const struct cluster_node *n, const char *tmpl)
{
        return can_take(n) && has_template(n, tmpl);
}

int cluster_place(struct cluster *c, const char *template_id, bool *ret_self, char *addr,
                  size_t addr_len, char *msg, size_t msg_len)
{
        int64_t last = __atomic_load_n(&c->last_ok_ms, __ATOMIC_RELAXED);
        if (now_ms() - last > CLUSTER_LEASE_TTL_S * 1000) {
                snprintf(msg, msg_len,
                         "cluster store unavailable: etcd has not answered for %llds (no "
                         "quorum?); creates are refused, existing sandboxes keep serving",
                         (long long)((now_ms() - last) / 1000));
                return -EHOSTUNREACH;
        }
        size_t idx[CLUSTER_MAX_NODES], n = 0;
        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < c->n_nodes && n < CLUSTER_MAX_NODES; i++)
                if (eligible(&c->nodes[i], template_id))
                        idx[n++] = i;
        bool anywhere = false;
        for (size_t i = 0; i < c->n_nodes && !anywhere; i++)
                anywhere = has_template(&c->nodes[i], template_id);
        if (n == 0 && !anywhere) { /* no such template: the local create says so (404) */
                pthread_mutex_unlock(&c->lock);
                *ret_self = true;
                return 0;
        }
        /* none that has it can take it: any node that can, which pulls the template's layers
         * from one that has it (cluster/layer-pull.h) */
        bool held = n > 0;
        for (size_t i = 0; !held && i < c->n_nodes && n < CLUSTER_MAX_NODES; i++)
                if (can_take(&c->nodes[i]))
                        idx[n++] = i;
        if (n == 0) {
                pthread_mutex_unlock(&c->lock);
                snprintf(msg, msg_len,
                         "no node can take template '%s' (every node is full or draining)",
                         template_id);
                return -ENOENT;
        }
        /* two distinct nodes at random (one when only one is eligible) */
        uint32_t rnd[2];
        (void)random_bytes(rnd, sizeof(rnd));
        size_t ia = rnd[0] % n, ib = n > 1 ? (ia + 1 + rnd[1] % (n - 1)) % n : ia;
        struct cluster_node *a = &c->nodes[idx[ia]], *b = &c->nodes[idx[ib]];
        struct cluster_node *pick = b->sandboxes + b->inflight < a->sandboxes + a->inflight ? b : a;
        /* counted at once in this node's view, so a burst of creates through one node spreads
         * before the next beat brings the real figures */
        pick->inflight++;
        *ret_self = strcmp(pick->name, c->name) == 0;
        snprintf(addr, addr_len, "%s", pick->addr);
        pthread_mutex_unlock(&c->lock);
        return 0;
}

void cluster_map_note(struct cluster *c, const char *id, const char *node)
{
        pthread_mutex_lock(&c->lock);
        map_set_locked(c, id, node);
        pthread_mutex_unlock(&c->lock);
}

int cluster_map_sandbox(struct cluster *c, const char *id)
{
        char key[200];
        snprintf(key, sizeof(key), CLUSTER_PREFIX "sandboxes/%s", id);
        /* a member of three just lost (the leader, say) leaves etcd without a leader until the
         * next election (about a second): a few tries span it, quorum lost still fails */
        int r = -EHOSTUNREACH;
        for (int i = 0; i < CLUSTER_MAP_TRIES; i++) {
                if (i > 0)
                        usleep(CLUSTER_MAP_RETRY_MS * 1000);
                r = etcd_put(c->etcd, key, c->name, 0);
                if (r >= 0 || r == -ENOMEM)
                        break;
        }
        if (r < 0)
                return r == -ENOMEM ? r : -EHOSTUNREACH;
        pthread_mutex_lock(&c->lock);
        map_set_locked(c, id, c->name);
        pthread_mutex_unlock(&c->lock);
        return 0;
}

int cluster_node_addr(struct cluster *c, const char *name, char *addr, size_t addr_len)
{
        pthread_mutex_lock(&c->lock);
        const struct cluster_node *n = node_locked(c, name);
        if (n)
                snprintf(addr, addr_len, "%s", n->addr);
        pthread_mutex_unlock(&c->lock);
        return n ? 0 : -ENOENT;
}

int cluster_nodes(struct cluster *c, struct cluster_node **ret, size_t *ret_n)
{
        pthread_mutex_lock(&c->lock);
        struct cluster_node *out = calloc(c->n_nodes ? c->n_nodes : 1, sizeof(*out));
        if (!out) {
                pthread_mutex_unlock(&c->lock);
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->n_nodes; i++) {
                out[i] = c->nodes[i];
                out[i].templates = strdup(c->nodes[i].templates);
        }
        *ret_n = c->n_nodes;
        pthread_mutex_unlock(&c->lock);
        *ret = out;
        return 0;
}

int cluster_set_drain(struct cluster *c, const char *name, bool drain)
{
        char key[200];
        snprintf(key, sizeof(key), CLUSTER_PREFIX "drain/%s", name);
        int r = drain ? etcd_put(c->etcd, key, "1", 0) : etcd_delete(c->etcd, key);
        if (r >= 0)
                r = load_nodes(c);
        return r < 0 && r != -ENOMEM ? -EHOSTUNREACH : r;
}

struct etcd *cluster_etcd(struct cluster *c)
{
        return c->etcd;
}
