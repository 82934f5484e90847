/* SPDX-License-Identifier: Apache-2.0 */
/* One running sandbox, as sbxd knows it, and its JSON shapes. */
#pragma once

#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "egress/policy/net-policy.h"
#include "core/validate.h"

#define ENVD_VERSION    "0.6.13"
#define SBX_CLIENT_ID   "sbx"
#define TOKEN_HEX_BYTES 24 /* envdAccessToken: 48 hex digits */

struct sandbox_metrics;
struct agent_log;

struct sandbox {
        char id[21];
        char template_id[TEMPLATE_NAME_MAX + 1];
        char token[2 * TOKEN_HEX_BYTES + 1];
        char *dir;          /* <state>/sandboxes/<id>, owned */
        pid_t pid;          /* host pid of the agent (PID 1 of the sandbox) */
        int pidfd;          /* pidfd of the agent, -EBADF when unknown */
        int slot;           /* uid slot, -1 when none */
        uint64_t serial;    /* unique for sbxd's lifetime, never 0 (registry_add sets it) */
        int64_t started_us; /* unix microseconds, unique: sandbox_set_started_now() */
        int64_t end_at;     /* unix seconds; read/written with __atomic (timeouts change it) */
        unsigned cpu_count, memory_mb, disk_mb;
        cJSON *metadata; /* owned object of strings, or NULL */
        cJSON *env_vars; /* owned object of strings, or NULL */
        /* lifecycle (lifecycle/lifecycle-pause.c, lifecycle/snapshot.c) */
        int paused;        /* __atomic: 1 while frozen or persisted (state "paused") */
        bool persisted;    /* under op_lock: paused on disk, no processes (pid 0) */
        bool moved;        /* __atomic, written under op_lock: moving or moved to another node */
        int64_t paused_at; /* unix seconds, under op_lock */
        bool auto_pause;   /* onTimeout "pause" instead of kill */
        bool pause_drops_memory; /* autoPauseMemory false: that pause keeps files only */
        bool auto_resume;        /* lifecycle.autoResume: traffic to a paused sandbox resumes it */
        int64_t timeout_s;       /* the create's timeout: what an auto-resume gives it again */
        /* ingress (e2b/ingress.h): "" = public user ports; else the trafficAccessToken that
         * user ports and the code interpreter need (network.allowPublicTraffic false) */
        char traffic_token[2 * TOKEN_HEX_BYTES + 1];
        char mask_host[MASK_HOST_MAX + 1]; /* network.maskRequestHost, "" when unset */
        bool pool;                         /* a warm-pool member: not registered, not listed */
        cJSON *layers;                     /* owned array of absolute layer paths, bottom first */
        /* owned, NULL unless a create from a pool snapshot: its subvolume, which the new
         * upper is a writable snapshot of (template_info.upper_seed); not recorded */
        char *upper_seed;
        cJSON *binds; /* owned array of {source,target,readonly} (from the template) */
        /* volumeMounts: owned array of {name, path, volumeID}, NULL when none; the first
         * volumes_held of them are counted users of their volume (storage/volume.h) until the
         * sandbox is torn down */
        cJSON *volume_mounts;
        unsigned volumes_held;
        /* the agent's stderr drained into agent.log (lifecycle/agent-log.h), NULL when none */
        struct agent_log *log;
        struct sandbox_metrics *metrics; /* owned sample ring, may be NULL */
        pthread_mutex_t op_lock;         /* serializes pause/resume/snapshot/persist */
        pthread_mutex_t end_lock;        /* an endAt change and its record write, together */
        unsigned refs;                   /* __atomic */
        unsigned upgrades;               /* __atomic: WebSockets to its ports open (e2b/proxy.c) */
        pthread_mutex_t record_lock;     /* sandbox.json writes vs. teardown of the dir */
        bool gone;                       /* under record_lock: the dir is being removed */
        /* egress (egress/egress.h): the effective policy, NULL when the sandbox has no link
         * (loopback only); replaced whole under net_lock (after record_lock when both) */
        struct net_policy *net;
        pthread_mutex_t net_lock;
};

enum sandbox_shape {
        SHAPE_SANDBOX, /* create / connect answer */
        SHAPE_LISTED,  /* list item */
        SHAPE_DETAIL,  /* GET /sandboxes/{id} */
        SHAPE_RECORD,  /* <dir>/sandbox.json */
};

/* New sandbox with refs = 1 and every field empty. NULL on ENOMEM. */
struct sandbox *sandbox_new(void);
struct sandbox *sandbox_ref(struct sandbox *s);
/* Drops a reference; the last one closes the pidfd and frees. Accepts NULL. */
void sandbox_unref(struct sandbox *s);
static inline void sandbox_unrefp(struct sandbox **s)
{
        sandbox_unref(*s);
}
#define _cleanup_sandbox_ __attribute__((cleanup(sandbox_unrefp)))

int64_t sandbox_get_end_at(const struct sandbox *s);
bool sandbox_is_paused(const struct sandbox *s);
void sandbox_set_paused(struct sandbox *s, bool paused);
void sandbox_set_end_at(struct sandbox *s, int64_t t);

/* The start in unix seconds (what the wire's startedAt shows). */
static inline int64_t sandbox_started_s(const struct sandbox *s)
{
        return s->started_us / 1000000;
}
/* Stamp s as started now: wall-clock microseconds, strictly after every start stamped or read
 * back before in this process, so the list order (by start) never ties and never falls back on
 * the random ids. */
void sandbox_set_started_now(struct sandbox *s);
/* The start from a sandbox.json record: "startedAtUs", else (an older record) "startedAtUnix"
 * in seconds; 0 when neither is a sane number. Later stamps stay after it. */
void sandbox_set_started_from_record(struct sandbox *s, const cJSON *record);

/* "2006-01-02T15:04:05Z" (UTC, second precision). buf >= 32 bytes. */
int rfc3339_format(int64_t t, char buf[static 32]);

/* The `domain` create, connect and get answer (getHost(port) of the SDKs is
 * "<port>-<id>.<domain>"); set once at start-up, before any request (NULL: null). */
void sandbox_json_set_domain(const char *domain);

/* JSON object for s in the given shape; NULL on ENOMEM. */
cJSON *sandbox_to_json(const struct sandbox *s, enum sandbox_shape shape);

/* Whether every key=value of filter (object of strings, may be NULL) is in s's metadata. */
int sandbox_metadata_matches(const struct sandbox *s, const cJSON *filter);

/* Replace s's effective egress policy (NULL: none); the old one is freed. */
void sandbox_set_net(struct sandbox *s, struct net_policy *net);
/* Whether s has an egress policy, and so a network link (server/egress/README.md "Egress"). */
bool sandbox_has_link(const struct sandbox *s);
/* A copy of s's policy in *ret; 0 when it has none (no link), 1 when copied, -ENOMEM. */
int sandbox_get_net(struct sandbox *s, struct net_policy *ret);
/* The "egress" member of a record, back into a policy (adoption): NULL when absent. -EBADMSG */
int sandbox_net_from_record(const cJSON *record, struct net_policy **ret);

/* Write <dir>/sandbox.json atomically (mode 0600). -ESRCH once sandbox_mark_gone() ran. */
int sandbox_save(struct sandbox *s);
/* From now on sandbox_save() writes nothing (call before removing the dir). */
void sandbox_mark_gone(struct sandbox *s);
