/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Sandbox lifecycle: create (jailer + agent /init), kill, and the timeout thread.
 *
 * Create, in order: template → uid slot → id, token → <state>/sandboxes/<id>/{rootfs/} →
 * jail spec → sbx-jailer (status line) → agent /init (port 0) → sandbox.json → registry.
 * Any failure tears down what exists (lifecycle/teardown.h) and gives the slot back. The registry
 * lock is held for table updates only, never while the jailer runs.
 */
#pragma once

#include <stddef.h>

#include "core/server.h"
#include "jail-spec.h"
#include "lifecycle/registry.h"
#include "storage/template.h"
#include "core/validate.h"

#define AGENT_INIT_TIMEOUT_MS 10000
#define SANDBOX_LOG_NAME      "agent.log" /* jailer and agent stderr, in the sandbox dir */
#define SANDBOX_PIDS_MAX      1024
#define CPU_PERIOD_US         100000

/* On success *ret is a referenced, registered sandbox, taken from the warm pool when one is
 * ready (lifecycle/pool.h) and the request asks for no sizes of its own. On failure: -ENOENT
 * (unknown template), -EDQUOT (--max-sandboxes or --max-creates reached: 429), -EUSERS (no uid slot
 * left), -EIO (the sandbox did not start) and others, with a client-facing message in errmsg. */
int lifecycle_create(struct server *srv, const struct create_params *p, struct sandbox **ret,
                     char *errmsg, size_t errlen);

/* Pieces of create, shared with the pool, resume-from-disk and fork (lifecycle/lifecycle.c):
 * a fresh random id + token; the request's metadata/env/timeout/lifecycle onto s; loading a
 * template with the client-facing message; starting the jailer + agent /init + record for a
 * filled-in s (its dir is created unless s->dir is set); registry + monitor. */
int lifecycle_new_identity(struct sandbox *s);
int lifecycle_apply_params(struct sandbox *s, const struct create_params *p);
int lifecycle_load_template(struct server *srv, const char *name, struct template_info *t,
                            char *errmsg, size_t errlen);
int lifecycle_spawn(struct server *srv, struct sandbox *s, const struct template_info *t,
                    char *errmsg, size_t errlen);
int lifecycle_init_agent(const struct sandbox *s, const struct template_info *t);

/* Remove from the registry and tear down. -ENOENT when unknown (or already being killed). */
int lifecycle_kill(struct server *srv, const char *id);

/* Tear down a sandbox already removed from the registry; drops the reference. */
void lifecycle_destroy(struct server *srv, struct sandbox *s, const char *why);

/* Move s's endAt to end_at (only later, with extend_only) and save its record. A record that
 * cannot be saved (-ENOSPC on a full state disk, ...) puts the old endAt back and returns the
 * error: an acknowledged change is never lost at the next restart. -ESRCH (the sandbox is
 * being removed) counts as saved. */
int lifecycle_set_end_at(struct server *srv, struct sandbox *s, int64_t end_at, bool extend_only);

/* Build the jail spec (api/jail-spec.h) for s from its record and template (pure apart from
 * allocation; used by tests). -ENOMEM, or -EINVAL with *ret_msg when its layers, binds or the
 * template's env are not of the spec's types (a hand-edited template.json); the jailer checks
 * everything else. */
int lifecycle_jail_spec(const struct server *srv, const struct sandbox *s,
                        const struct template_info *t, struct sbx_jail_spec **ret_spec,
                        const char **ret_msg);

/* Pause and resume (lifecycle/lifecycle-pause.c). Pause freezes the sandbox's cgroup (v2
 * cgroup.freeze): processes and memory stay, no CPU is used, its timeout stops running. -EBUSY when
 * already paused (409). keep_memory false (E2B's {"memory": false}): a filesystem-only pause, the
 * sandbox is persisted at once (its files kept, its processes gone) and a resume starts it fresh
 * on its files, with a new boot_id. lifecycle_pause_expired is the timer's onTimeout "pause"
 * (already marked), filesystem-only for a sandbox created with autoPauseMemory false.
 */
int lifecycle_pause(struct server *srv, struct sandbox *s, bool keep_memory);
int lifecycle_pause_expired(struct server *srv, struct sandbox *s);
/* Thaw a paused sandbox (or restart a persisted one from its layers) and set endAt = now +
 * timeout; for a running one only extend endAt. *ret_resumed tells whether it was paused. */
int lifecycle_resume(struct server *srv, struct sandbox *s, int64_t timeout_s, bool *ret_resumed,
                     char *errmsg, size_t errlen);
/* autoResume: resume a paused sandbox with autoResume set for its create's timeout (a proxied
 * request arrived). 1 when it runs now, 0 when it stays paused (no autoResume), -errno. */
int lifecycle_auto_resume(struct server *srv, struct sandbox *s);
/* Connect with {"memory": false} (the SDK's onResume "reboot"): a sandbox paused with its memory
 * drops it first (persisted), so that the resume starts it fresh. 0 when nothing was to drop. */
int lifecycle_drop_memory(struct server *srv, struct sandbox *s);
/* Persist a paused (frozen) sandbox to disk: its upper becomes a store layer on top of its
 * layers, its processes, cgroups and tmpfs go; the record stays (state paused, persisted).
 * -EINVAL when not paused, 0 when already persisted. */
int lifecycle_persist(struct server *srv, struct sandbox *s);

/* Egress (lifecycle/lifecycle-net.c, egress/egress.h). lifecycle_net_for_create: the
 * policy a sandbox gets for what it asked; 1 with *ret (caller owns) when it needs a link, 0
 * (loopback only, *ret NULL). lifecycle_net_link: spec->egress for s (1), 0 when s has no
 * policy. lifecycle_net_rules: s's rules in place (while its jailer runs: a link without
 * rules passes nothing), 0 without a policy, -errno with errmsg. lifecycle_net_remove: s's rules
 * and link gone (teardown). lifecycle_set_network: PUT /sandboxes/{id}/network, rules replaced in
 * one transaction (open connections stay), record saved; -EBUSY with errmsg when s has no link and
 * the policy needs one. lifecycle_net_reconcile: after adoption. */
int lifecycle_net_for_create(struct server *srv, const struct net_policy *asked,
                             struct net_policy **ret);
int lifecycle_net_link(struct server *srv, struct sandbox *s, struct sbx_jail_spec *spec);
int lifecycle_net_rules(struct server *srv, struct sandbox *s, char *errmsg, size_t errlen);
void lifecycle_net_remove(struct server *srv, struct sandbox *s);
int lifecycle_set_network(struct server *srv, struct sandbox *s, const struct net_policy *asked,
                          char *errmsg, size_t errlen);
int lifecycle_net_reconcile(struct server *srv);
/* The egress stopped (egress_free()) and sbx-egress's uid slot given back. */
void lifecycle_net_stop(struct server *srv);

/* Timeout thread: kills sandboxes whose endAt passed (or pauses those with autoPause). */
int lifecycle_timer_start(struct server *srv);
void lifecycle_timer_stop(struct server *srv);
