/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A client of etcd's v3 JSON gateway (POST /v3/kv/range, /v3/kv/put, /v3/kv/txn,
 * /v3/kv/deleterange, /v3/lease/grant, /v3/lease/keepalive, /v3/watch) over HTTP with libcurl; keys
 * and values are base64 on the wire and plain strings here. Each call tries the endpoints in turn,
 * starting with the last one that answered, each with ETCD_CALL_TIMEOUT_MS. Thread-safe: every call
 * has its own curl handle.
 */
#pragma once

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#define ETCD_MAX_ENDPOINTS   8
#define ETCD_CALL_TIMEOUT_MS 2000
#define ETCD_MAX_ANSWER      (8 * 1024 * 1024) /* a range answer bigger than this: -EMSGSIZE */
#define ETCD_MAX_VALUE       (64 * 1024)

struct etcd {
        char *endpoint[ETCD_MAX_ENDPOINTS]; /* "http://host:port" */
        unsigned n;
        unsigned current; /* __atomic: the one that answered last */
};

/* "etcd://host:port[,host:port...]" (also http://). -EINVAL on anything else. */
int etcd_new(const char *spec, struct etcd **ret);
void etcd_free(struct etcd *e);

/* One key/value as read. */
struct etcd_kv {
        char *key, *value;
        int64_t mod_revision;
};
void etcd_kvs_free(struct etcd_kv *kvs, size_t n);

/* Every key under prefix (sorted by key), and the store's revision. */
int etcd_range_prefix(struct etcd *e, const char *prefix, struct etcd_kv **ret, size_t *ret_n,
                      int64_t *ret_rev);
/* The value of key itself (not of keys it is a prefix of): 0 with *ret (malloc'd), -ENOENT,
 * or etcd's error. */
int etcd_get(struct etcd *e, const char *key, char **ret);
/* value at key, attached to lease (0: none). */
int etcd_put(struct etcd *e, const char *key, const char *value, int64_t lease);
/* value at key only when key does not exist (a transaction on its create revision): 0 either
 * way (read the key to learn which value won). */
int etcd_put_absent(struct etcd *e, const char *key, const char *value);
/* value at key attached to lease, only when key does not exist (held == 0) or is attached to the
 * lease held (a transaction on its create revision, resp. its lease): *ret_put says whether it
 * was written. A name held under a lease of another process is never overwritten. */
int etcd_put_claim(struct etcd *e, const char *key, const char *value, int64_t lease, int64_t held,
                   bool *ret_put);
int etcd_delete(struct etcd *e, const char *key);
int etcd_lease_grant(struct etcd *e, unsigned ttl_s, int64_t *ret_id);
/* Refresh a lease: its remaining TTL, -ENOENT when it has expired. */
int etcd_lease_keepalive(struct etcd *e, int64_t id);

/* Watch every key under prefix from revision start_rev; on_event(ctx, key, value or NULL for a
 * delete, revision) for each change. Returns when *stop turns true (checked every second), the
 * stream breaks (-EIO) or etcd compacted past start_rev (-ESTALE). */
typedef void (*etcd_watch_fn)(void *ctx, const char *key, const char *value, int64_t rev);
int etcd_watch_prefix(struct etcd *e, const char *prefix, int64_t start_rev, etcd_watch_fn fn,
                      void *ctx, const bool *stop);
