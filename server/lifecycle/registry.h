/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The table of running sandboxes and the uid slot allocator, behind one mutex. The lock is
 * never held across I/O: a sandbox is added only once it runs and removed before teardown.
 * Lookups return a reference (sandbox_unref when done).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lifecycle/sandbox.h"

/* uid slots of the host, shared by every sbxd on it (core/host-claim.h): as many as the egress
 * links' addressing plan has addresses for (egress/policy/link-addr.h); 2^20 + 16384 * 65536
 * host ids stay below 2^31 (no tool reads a uid as negative) */
#define REGISTRY_MAX_SLOTS 16384
#define UID_SLOT_BASE      (1u << 20)
#define UID_SLOT_SIZE      65536u

/* The first host id of uid slot slot (sandbox id 0). */
static inline uid_t registry_uid_base(int slot)
{
        return UID_SLOT_BASE + (uid_t)slot * UID_SLOT_SIZE;
}

struct registry;
struct host_claims;

int registry_new(struct registry **ret);
/* From now on a slot is also claimed host-wide (core/host-claim.h): one another sbxd of the
 * host holds is never handed out, and a reserve of one fails with -EBUSY. */
void registry_set_host(struct registry *r, struct host_claims *h);
/* Drops every remaining reference. */
void registry_free(struct registry *r);

/* Reserve the lowest free uid slot, host-wide (-EUSERS when all are used) / give it back. */
int registry_slot_acquire(struct registry *r, int *ret_slot);
void registry_slot_release(struct registry *r, int slot);
/* Reserve a given slot (re-adoption); -EBUSY when taken (here or by another sbxd of the host),
 * -ERANGE when out of range. */
int registry_slot_reserve(struct registry *r, int slot);
/* After adoption: this instance's host-wide claims that no slot of ours uses are given back
 * (those of sandboxes gone while sbxd was down). Their number, or -errno. */
int registry_slot_sweep(struct registry *r);

/* Insert s (the registry takes its own reference) and give it a fresh serial; -EEXIST for a
 * duplicate id. Wakes the timeout waiter. */
int registry_add(struct registry *r, struct sandbox *s);
/* Referenced sandbox or NULL. */
struct sandbox *registry_get(struct registry *r, const char *id);
/* Remove and return the registry's reference, or NULL when absent (someone else took it). */
struct sandbox *registry_take(struct registry *r, const char *id);
/* Same, by serial. */
struct sandbox *registry_take_serial(struct registry *r, uint64_t serial);
/* Set end_at (extend_only: never shorten) and wake the timeout waiter. */
void registry_set_end_at(struct registry *r, struct sandbox *s, int64_t end_at, bool extend_only);
/* References to every sandbox sorted by (started_us, id): oldest first; caller unrefs each and
 * frees. */
int registry_list(struct registry *r, struct sandbox ***ret, size_t *ret_n);
size_t registry_count(struct registry *r);

/* Block until some running sandbox's end_at has passed and return it; NULL once
 * registry_shutdown() was called. Paused sandboxes never expire. A sandbox with auto_pause is
 * marked paused and stays registered (*ret_pause = true: the caller freezes it); any other is
 * removed and the registry's reference returned (the caller tears it down). */
struct sandbox *registry_wait_expired(struct registry *r, bool *ret_pause);
/* Wake the timeout waiter (a sandbox was resumed). */
void registry_wake(struct registry *r);
void registry_shutdown(struct registry *r);
