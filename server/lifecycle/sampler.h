/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sampler thread: every SAMPLE_INTERVAL_S it reads each registered sandbox's cgroup
 * accounting (cpu, memory, OOM kills) and its disk use (its storage pool qgroup, or statvfs of
 * the host-visible image or tmpfs upper) into a per-sandbox ring of SAMPLE_RING samples: GET
 * /sandboxes/{id}/metrics. It also persists sandboxes paused for longer than --persist-paused-after
 * to disk (sooner when the host runs short of memory, and all of them at shutdown).
 */
#pragma once

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "core/server.h"
#include "lifecycle/sandbox.h"

#define SAMPLE_INTERVAL_S 5
#define SAMPLE_RING       120 /* 10 minutes */

int sampler_start(struct server *srv);
void sampler_stop(struct server *srv);

/* With --persist-paused-after set: persist paused sandboxes paused that long (or every paused
 * one when memory is short, MemAvailable < MemTotal / 10; or all = every one: shutdown). */
void sampler_persist_paused(struct server *srv, bool all);

/* Take one sample of s now (also used when the ring is still empty). */
void sampler_sample(const struct server *srv, struct sandbox *s);
/* SandboxMetric items with start <= timestampUnix <= end (0: unbounded). */
cJSON *sampler_metrics_json(struct sandbox *s, int64_t start, int64_t end);
