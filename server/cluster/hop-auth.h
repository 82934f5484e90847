/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Node-to-node authentication of CLUSTER_HOP_HEADER ("Sbx-Cluster-Hop"), the header that makes
 * a node answer a request itself (no forwarding, no fan-out, no placement). A node sends
 *
 *     Sbx-Cluster-Hop: v1 <unix seconds> <hex HMAC-SHA256>
 *
 * the HMAC keyed with the cluster's hop secret over "sbx-cluster-hop v1\n<seconds>\n<METHOD>\n
 * <request target>" (the raw target: path and query as sent). A node takes the header only
 * when the MAC is right and the time within HOP_AUTH_WINDOW_S of its own clock (either way);
 * anything else is refused (cluster-http.c answers 401). The secret is the cluster's: 32
 * random bytes (hex) under CLUSTER_PREFIX "hop-secret" in etcd, written by the first node that
 * finds none (a create-if-absent transaction), read by every node at start. It is never sent
 * to a client; nothing a client holds (an API key) derives it.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "cluster/forward.h" /* CLUSTER_HOP_HEADER */

#define HOP_AUTH_WINDOW_S   30 /* clock difference and transit time accepted */
#define HOP_AUTH_SECRET_LEN 64 /* hex digits */
#define HOP_AUTH_VALUE_MAX  96 /* "v1 <seconds> <64 hex>" with its NUL */

/* The header's value for method + target at now, keyed with secret. */
void hop_auth_sign(const char *secret, const char *method, const char *target, time_t now,
                   char out[static HOP_AUTH_VALUE_MAX]);
/* 0 when value is a valid signature of method + target within the window of now; -EBADMSG a
 * value not of the form, -ETIME outside the window, -EACCES a wrong MAC (or no secret). */
int hop_auth_verify(const char *secret, const char *value, const char *method, const char *target,
                    time_t now);

/* The process's secret (one cluster per process): set once at start (cluster_start), NULL
 * before. hop_auth_set(NULL) forgets it (tests). */
void hop_auth_set(const char *secret);
const char *hop_auth_secret(void);
/* The header's value for a request this node sends, with the process's secret and the current
 * time. false without a secret (then the header is not sent). */
bool hop_auth_value(const char *method, const char *target, char out[static HOP_AUTH_VALUE_MAX]);
/* The check of a received value with the process's secret and the current time. */
int hop_auth_check(const char *value, const char *method, const char *target);
/* A short reason for a refusal of hop_auth_verify(). */
const char *hop_auth_strerror(int r);

struct etcd;
/* Read the cluster's secret from etcd at key, writing a fresh one first when there is none,
 * and set it (hop_auth_set). 0, or the etcd error. */
int hop_auth_load(struct etcd *e, const char *key);
