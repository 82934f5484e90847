/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every sbxd on a host shares, allocated host-wide (server/egress/README.md "Several sbxd on
 * one host"): the instance's name (its nftables tables are named after it) and the uid slots (a
 * slot is a sandbox's host uid range, its egress link's name and its address blocks), claimed
 * under HOST_CLAIM_DIR, a tmpfs every sbxd of the host honours whatever its state dir:
 *
 *   HOST_CLAIM_DIR/instances/<id>  the instance: its state dir; locked (flock) while its sbxd
 *                                  runs. <id> is 16 hex digits of the SHA-256 of the state
 *                                  dir's path; another state dir with the same id is refused
 *   HOST_CLAIM_DIR/slots/<slot>    a slot's claim: the state dir of the instance that holds it,
 *                                  made with O_EXCL (one winner), removed when it is given back
 *
 * A claim of a state dir that no longer exists is stale and taken over (under the lock file
 * HOST_CLAIM_DIR/lock, so that two instances never take over the same one); the record of an
 * instance whose sbxd was killed and whose state dir is gone is removed by the next sbxd that
 * starts (never while its lock is held). Claims of an
 * instance whose sbxd is down stay: its sandboxes keep running and keep their slots; its next
 * sbxd gives back, after adopting its sandboxes, the claims none of them uses.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define HOST_CLAIM_DIR   "/run/sbx"
#define HOST_CLAIM_ENV   "SBX_HOST_CLAIM_DIR" /* another directory (tests of this module) */
#define HOST_INSTANCE_ID 16                   /* hex digits of an instance's id */

struct host_claims;

/* The instance of state_dir, claimed for this process's life. -EEXIST with a message when
 * another state dir has the same id, -EBUSY when another sbxd runs on this state dir. */
int host_claims_open(const char *state_dir, struct host_claims **ret, char *errmsg, size_t errlen);
/* Gives back the instance's lock (not its slots: sandboxes that keep running keep them). */
void host_claims_close(struct host_claims *h);

/* The instance's id: HOST_INSTANCE_ID hex digits. */
const char *host_claims_id(const struct host_claims *h);

/* Claims slot for this instance: 0 (also when it held it already), -EBUSY when another
 * instance holds it, -errno. */
int host_slot_claim(struct host_claims *h, int slot);
/* Gives slot back if this instance holds it. */
void host_slot_release(struct host_claims *h, int slot);
/* Gives back every slot this instance holds that in_use[] (max entries) does not mark. */
int host_slot_sweep(struct host_claims *h, const bool *in_use, int max);
