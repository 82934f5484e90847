/* SPDX-License-Identifier: Apache-2.0 */
#include "cluster/move.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cluster/cluster.h"
#include "cluster/forward.h"
#include "cluster/layer-pull.h"
#include "cluster/node-call.h"
#include "fd-util.h"
#include "json-util.h"
#include "lifecycle/adopt.h"
#include "lifecycle/lifecycle.h"
#include "lifecycle/registry.h"
#include "lifecycle/sandbox.h"
#include "lifecycle/upper.h"
#include "log.h"
#include "macros.h"
#include "native/v1.h"
#include "storage/layer-store.h"
#include "storage/template.h"

/* ---- the target's side ---- */

static const char *node_addr(struct cluster_node *nodes, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(nodes[i].name, name) == 0)
                        return nodes[i].addr;
        return NULL;
}

/* The record's "sha256:<hex>" layers pulled from addr, as this node's store paths. */
static int local_layers(struct server *srv, const char *addr, const cJSON *refs, cJSON **ret,
                        char *errmsg, size_t errlen)
{
        const char *state = srv->config->state_dir;
        const cJSON *l;
        if (!cJSON_IsArray(refs) || cJSON_GetArraySize(refs) < 1 ||
            cJSON_GetArraySize(refs) > TEMPLATE_MAX_LAYERS + 1) {
                snprintf(errmsg, errlen, "the record has no usable layers");
                return -EINVAL;
        }
        _cleanup_json_ cJSON *out = cJSON_CreateArray();
        if (!out)
                return -ENOMEM;
        cJSON_ArrayForEach(l, refs)
        {
                const char *v = cJSON_IsString(l) ? l->valuestring : "";
                if (strncmp(v, LAYER_PREFIX, strlen(LAYER_PREFIX)) != 0) {
                        snprintf(errmsg, errlen, "a layer that is not sha256:<hex>");
                        return -EINVAL;
                }
                const char *hex = v + strlen(LAYER_PREFIX);
                int r = cluster_pull_layer(srv, addr, hex, NULL, errmsg, errlen);
                if (r < 0)
                        return r;
                char path[4096];
                layer_store_path(state, hex, path, sizeof(path));
                cJSON_AddItemToArray(out, cJSON_CreateString(path));
        }
        *ret = TAKE_PTR(out);
        return 0;
}

/* A persisted sandbox from a record: its layers here, a uid slot of this node, its dir and
 * record written, registered. Under the store's read lock (its layers are referenced by the
 * record before gc can see them unreferenced). */
static int adopt_here(struct server *srv, const char *addr, const char *text, struct sandbox **ret,
                      unsigned *ret_status, char *errmsg, size_t errlen)
{
        _cleanup_sandbox_ struct sandbox *s = NULL;
        *ret_status = 400;
        int r = adopt_parse_record(text, &s);
        if (r < 0) {
                snprintf(errmsg, errlen, "not a sandbox record");
                return r;
        }
        if (!s->persisted || s->pool || s->volume_mounts) {
                snprintf(errmsg, errlen, "only a persisted sandbox without volumes moves");
                return -EINVAL;
        }
        struct sandbox *have = registry_get(srv->registry, s->id);
        if (have) {
                sandbox_unref(have);
                *ret_status = 409;
                snprintf(errmsg, errlen, "sandbox %s is registered here already", s->id);
                return -EEXIST;
        }
        *ret_status = 502;
        cluster_seed_template(srv, s->template_id); /* its lower layers may be here already */
        cJSON *layers = NULL;
        r = local_layers(srv, addr, s->layers, &layers, errmsg, errlen);
        if (r < 0)
                return r;
        cJSON_Delete(s->layers);
        s->layers = layers;
        /* Its template gives the agent's env and defaults at each start and, never the record
         * (whoever holds an API key can send one), the host binds: pulled too when this node
         * lacks it. The sizes must be within this node's limits, as a create's are. */
        char tmsg[512] = "";
        struct template_info t = {};
        r = lifecycle_load_template(srv, s->template_id, &t, tmsg, sizeof(tmsg));
        if (r < 0) {
                snprintf(errmsg, errlen, "its template: %s", tmsg);
                return r;
        }
        cJSON_Delete(s->binds);
        s->binds = TAKE_PTR(t.binds);
        template_done(&t);
        const struct sbxd_config *cfg = srv->config;
        if (s->cpu_count > cfg->max_cpus || s->memory_mb > cfg->max_memory_mb ||
            s->disk_mb > cfg->max_disk_mb) {
                *ret_status = 409;
                snprintf(errmsg, errlen,
                         "its sizes (%u CPUs, %u MiB memory, %u MiB disk) are past this node's "
                         "limits",
                         s->cpu_count, s->memory_mb, s->disk_mb);
                return -EINVAL;
        }
        *ret_status = 503;
        int slot;
        r = registry_slot_acquire(srv->registry, &slot);
        if (r < 0) {
                snprintf(errmsg, errlen, "no uid slot left on this node");
                return r;
        }
        s->slot = slot;
        s->pid = 0;
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/sandboxes", srv->config->state_dir);
        (void)mkdir(dir, 0700);
        snprintf(dir, sizeof(dir), "%s/sandboxes/%s", srv->config->state_dir, s->id);
        if (mkdir(dir, 0700) < 0) {
                r = -errno;
                registry_slot_release(srv->registry, slot);
                snprintf(errmsg, errlen, "its dir: %s", strerror(-r));
                return r;
        }
        s->dir = strdup(dir);
        if (!s->dir || (r = sandbox_save(s)) < 0 || (r = registry_add(srv->registry, s)) < 0) {
                r = s->dir ? r : -ENOMEM;
                rm_rf(dir);
                registry_slot_release(srv->registry, slot);
                snprintf(errmsg, errlen, "registering it: %s", strerror(-r));
                return r;
        }
        *ret = TAKE_PTR(s);
        return 0;
}

int cluster_handle_adopt(struct request *req)
{
        struct server *srv = req->srv; /* a PLACE_NODE_ONLY row: another node asks */
        const cJSON *body = req->body ? req->body->json : NULL;
        const cJSON *from = cJSON_GetObjectItemCaseSensitive(body, "from");
        const cJSON *record = cJSON_GetObjectItemCaseSensitive(body, "record");
        bool resume = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(body, "resume"));
        if (!cJSON_IsString(from) || !cJSON_IsObject(record))
                return v1_reply_error(req, 400, "bad_request", "want {from, record, resume}");
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        if (cluster_nodes(srv->cluster, &nodes, &n) < 0)
                return v1_reply_error(req, 500, NULL, "out of memory");
        char addr[CLUSTER_ADDR_MAX + 1] = "";
        const char *a = node_addr(nodes, n, from->valuestring);
        if (a)
                snprintf(addr, sizeof(addr), "%s", a);
        cluster_nodes_free(nodes, n);
        if (!addr[0])
                return v1_reply_error(req, 400, "bad_request", "no live node '%.63s'",
                                      from->valuestring);
        _cleanup_free_ char *text = cJSON_PrintUnformatted(record);
        if (!text)
                return v1_reply_error(req, 500, NULL, "out of memory");
        char err[512] = "";
        unsigned status;
        struct sandbox *s = NULL;
        layer_store_read_lock();
        int r = adopt_here(srv, addr, text, &s, &status, err, sizeof(err));
        layer_store_unlock();
        if (r < 0)
                return v1_reply_error(req, status, "move_failed", "%s", err);
        /* traffic follows once the map says so */
        r = cluster_map_sandbox(srv->cluster, s->id);
        if (r < 0) {
                struct sandbox *t = registry_take(srv->registry, s->id);
                if (t)
                        lifecycle_destroy(srv, t, "move undone: no mapping");
                sandbox_unref(s);
                return v1_reply_error(req, 503, "cluster_unavailable",
                                      "cluster store unavailable: %s", strerror(-r));
        }
        bool resumed = false;
        if (resume) {
                int64_t left = sandbox_get_end_at(s) - (int64_t)time(NULL);
                r = lifecycle_resume(srv, s, MAX(left, (int64_t)CLUSTER_MOVE_MIN_LEFT_S), &resumed,
                                     err, sizeof(err));
                if (r < 0) /* it stays here, paused: what a failed resume leaves anywhere */
                        log_warning("cluster: moved sandbox %s not resumed: %s", s->id, err);
        }
        log_info("cluster: sandbox %s moved here from node %s (%s)", s->id, from->valuestring,
                 resumed ? "running" : "paused");
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "sandboxID", s->id);
        cJSON_AddStringToObject(o, "state", sandbox_is_paused(s) ? "paused" : "running");
        if (resume && r < 0)
                cJSON_AddStringToObject(o, "resumeError", err);
        sandbox_unref(s);
        return http_reply_cjson(req, 200, o, NULL, NULL);
}

/* ---- the drained node's side ---- */

/* The least loaded live node that can take one more (not this one, not draining). */
static bool pick_target(struct cluster_node *nodes, size_t n, const char *self, unsigned *extra,
                        size_t *ret)
{
        bool found = false;
        for (size_t i = 0; i < n; i++) {
                unsigned load = nodes[i].sandboxes + nodes[i].inflight + extra[i];
                if (strcmp(nodes[i].name, self) == 0 || nodes[i].draining ||
                    load >= nodes[i].capacity)
                        continue;
                if (!found || load < nodes[*ret].sandboxes + nodes[*ret].inflight + extra[*ret])
                        *ret = i;
                found = true;
        }
        return found;
}

/* s's record for the target: its layers as store refs (a template's layer dirs put in the
 * store, as a snapshot does). Under the store's read lock and s's op_lock. */
static int move_record(struct server *srv, const struct sandbox *s, cJSON **ret)
{
        _cleanup_json_ cJSON *rec = sandbox_to_json(s, SHAPE_RECORD);
        cJSON *refs = cJSON_CreateArray();
        int r = rec && refs ? layer_store_refs(srv->config->state_dir, s->layers, refs) : -ENOMEM;
        /* A persisted sandbox on the storage pool keeps its files in its subvolume, not in its
         * layers: they leave the node as one more layer, hashed (and copied) now. */
        if (r >= 0 && lifecycle_upper_in_pool(srv, s)) {
                char hex[LAYER_ID_MAX];
                r = lifecycle_upper_ingest(srv, s, hex);
                if (r >= 0)
                        layer_store_ref_add(refs, hex);
        }
        if (r < 0) {
                cJSON_Delete(refs);
                return r;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(rec, "layers");
        cJSON_AddItemToObject(rec, "layers", refs);
        *ret = TAKE_PTR(rec);
        return 0;
}

/* The answer's message, or curl's reason. */
static void answer_reason(const struct node_answer *a, char *buf, size_t len)
{
        _cleanup_json_ cJSON *j = a->body ? cJSON_Parse(a->body) : NULL;
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(e, "message");
        if (a->status == 0)
                snprintf(buf, len, "the target did not answer: %s", a->error);
        else
                snprintf(buf, len, "the target refused (%ld): %s", a->status,
                         cJSON_IsString(m) ? m->valuestring : "no message");
}

/* Move s to the node at addr (name). 0 moved; else -errno with why (s stays here, running
 * again when it was). */
static int move_one(struct server *srv, struct sandbox *s, const char *name, const char *addr,
                    char *why, size_t whylen)
{
        if (s->volume_mounts) {
                snprintf(why, whylen, "it mounts volumes, which live on this node");
                return -EXDEV;
        }
        pthread_mutex_lock(&s->op_lock);
        bool was_paused = sandbox_is_paused(s), persisted = s->persisted;
        pthread_mutex_unlock(&s->op_lock);
        int r = 0;
        if (!was_paused)
                r = lifecycle_pause(srv, s, false); /* frozen, then persisted */
        else if (!persisted)
                r = lifecycle_drop_memory(srv, s);
        if (r < 0) {
                snprintf(why, whylen, "pausing it to disk failed: %s", strerror(-r));
                return r;
        }
        layer_store_read_lock();
        pthread_mutex_lock(&s->op_lock);
        _cleanup_json_ cJSON *rec = NULL;
        if (!s->persisted) {
                r = -EBUSY;
                snprintf(why, whylen,
                         "it could not be persisted to disk (an older sandbox without a "
                         "host-visible upper, or a full disk); see the log");
        } else if ((r = move_record(srv, s, &rec)) < 0)
                snprintf(why, whylen, "its layers: %s", strerror(-r));
        _cleanup_json_ cJSON *body = r >= 0 ? cJSON_CreateObject() : NULL;
        if (body) {
                cJSON_AddStringToObject(body, "from", cluster_self(srv->cluster));
                cJSON_AddItemToObject(body, "record", TAKE_PTR(rec));
                cJSON_AddBoolToObject(body, "resume", !was_paused);
        }
        _cleanup_free_ char *text = body ? cJSON_PrintUnformatted(body) : NULL;
        struct node_answer a = {};
        if (r >= 0 && !text)
                r = -ENOMEM;
        /* the op_lock is held across the call: a connect here waits, then finds it moved;
         * marked moving, the beat's reconcile leaves its mapping to the target */
        if (r >= 0) {
                __atomic_store_n(&s->moved, true, __ATOMIC_RELEASE);
                r = node_call(srv, addr, "POST", "/v1/cluster/adopt", text, strlen(text),
                              CLUSTER_MOVE_ADOPT_MS, &a);
        }
        if (r >= 0 && a.status != 200) {
                answer_reason(&a, why, whylen);
                r = -EIO;
        }
        node_answer_done(&a);
        if (r >= 0) {
                cluster_map_note(srv->cluster, s->id, name);
                struct sandbox *t = registry_take(srv->registry, s->id);
                pthread_mutex_unlock(&s->op_lock);
                layer_store_unlock();
                if (t)
                        lifecycle_destroy(srv, t, "moved to another node");
                return 0;
        }
        __atomic_store_n(&s->moved, false, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&s->op_lock);
        layer_store_unlock();
        if (!was_paused) { /* back as it was, here: a fresh start on its files */
                char err[256];
                bool resumed;
                int64_t left = sandbox_get_end_at(s) - (int64_t)time(NULL);
                if (lifecycle_resume(srv, s, MAX(left, (int64_t)CLUSTER_MOVE_MIN_LEFT_S), &resumed,
                                     err, sizeof(err)) < 0)
                        log_warning("cluster: sandbox %s stays paused here: %s", s->id, err);
        }
        return r;
}

static cJSON *move_all(struct server *srv, unsigned *ret_moved, unsigned *ret_kept)
{
        struct sandbox **all = NULL;
        size_t n = 0, nn = 0;
        struct cluster_node *nodes = NULL;
        cJSON *items = cJSON_CreateArray();
        *ret_moved = *ret_kept = 0;
        if (!items || registry_list(srv->registry, &all, &n) < 0 ||
            cluster_nodes(srv->cluster, &nodes, &nn) < 0) {
                cJSON_Delete(items);
                items = NULL;
        }
        unsigned *extra = items ? calloc(nn ? nn : 1, sizeof(*extra)) : NULL;
        const char *self = cluster_self(srv->cluster);
        for (size_t i = 0; extra && i < n; i++) {
                struct sandbox *s = all[i];
                cJSON *o = cJSON_CreateObject();
                char why[600] = "";
                size_t k = 0;
                int r = -ENOSPC;
                if (!pick_target(nodes, nn, self, extra, &k))
                        snprintf(why, sizeof(why),
                                 "no other node can take it (all full, draining or lost)");
                else
                        r = move_one(srv, s, nodes[k].name, nodes[k].addr, why, sizeof(why));
                cJSON_AddStringToObject(o, "sandboxID", s->id);
                cJSON_AddStringToObject(o, "outcome", r >= 0 ? "moved" : "kept");
                if (r >= 0) {
                        extra[k]++;
                        (*ret_moved)++;
                        cJSON_AddStringToObject(o, "node", nodes[k].name);
                        log_info("cluster: sandbox %s moved to node %s", s->id, nodes[k].name);
                } else {
                        (*ret_kept)++;
                        cJSON_AddStringToObject(o, "reason", why);
                        log_warning("cluster: sandbox %s stays on this node: %s", s->id, why);
                }
                cJSON_AddItemToArray(items, o);
        }
        for (size_t i = 0; i < n; i++)
                sandbox_unref(all[i]);
        free(all);
        free(extra);
        cluster_nodes_free(nodes, nn);
        return items;
}

int cluster_drain_move(struct request *req, const char *name)
{
        struct server *srv = req->srv;
        if (strcmp(name, cluster_self(srv->cluster)) != 0) {
                /* the drained node moves its own sandboxes: handed to it */
                struct cluster_node *nodes = NULL;
                size_t n = 0;
                if (cluster_nodes(srv->cluster, &nodes, &n) < 0)
                        return v1_reply_error(req, 500, NULL, "out of memory");
                char addr[CLUSTER_ADDR_MAX + 1] = "", target[128];
                const char *a = node_addr(nodes, n, name);
                if (a)
                        snprintf(addr, sizeof(addr), "%s", a);
                cluster_nodes_free(nodes, n);
                if (!addr[0])
                        return v1_reply_error(req, 404, "not_found",
                                              "no live node '%s': drained, nothing moved", name);
                snprintf(target, sizeof(target), "/v1/nodes/%s/drain?move=1", name);
                struct node_answer ans;
                int r = node_call(srv, addr, "POST", target, NULL, 0, CLUSTER_MOVE_REMOTE_MS, &ans);
                if (r < 0 || ans.status == 0) {
                        node_answer_done(&ans);
                        return v1_reply_error(req, 502, "node_lost",
                                              "node %s did not answer the move: %s", name,
                                              ans.error);
                }
                r = http_reply_bytes(req, (unsigned)ans.status, "application/json",
                                     ans.body ? ans.body : "", ans.len, NULL, NULL);
                node_answer_done(&ans);
                return r;
        }
        unsigned moved, kept;
        cJSON *items = move_all(srv, &moved, &kept);
        if (!items)
                return v1_reply_error(req, 500, NULL, "out of memory");
        _cleanup_json_ cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "node", name);
        cJSON_AddNumberToObject(o, "moved", moved);
        cJSON_AddNumberToObject(o, "kept", kept);
        cJSON_AddItemToObject(o, "sandboxes", items);
        return http_reply_cjson(req, 200, o, NULL, NULL);
}
