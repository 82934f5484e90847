/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The jail spec: the JSON document sbxd writes on the jailer's spec fd (jailer/README.md, "Spec").
 * jail_spec_parse() is the only place that trusts nothing about it: every field is checked here
 * so the rest of the jailer can rely on absolute, normalised paths and sane limits.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define JAIL_ID_MAX        63
#define JAIL_LAYERS_MAX    64
#define JAIL_BINDS_MAX     32
#define JAIL_ENV_MAX       256
#define JAIL_SPEC_MAX      (1024 * 1024) /* bytes of JSON accepted on the spec fd */
#define JAIL_PATH_MAX      1024          /* host paths in the spec */
#define JAIL_ENV_VALUE_MAX (32 * 1024)
#define JAIL_UID_COUNT_MIN 65536
#define JAIL_SOCKET_NAME_MAX                                                                       \
        64 /* last component of the socket path */ /* sandbox ids 0 (root), 1000 (user), 65534     \
                                                      (nobody) */

struct jail_bind {
        char *source; /* absolute host path */
        char *target; /* absolute path inside the sandbox, never "/" */
        int readonly;
};

struct jail_spec {
        char *id; /* [a-z0-9]{1,63} */
        char *rootfs;
        char *socket;  /* any length; its last component <= JAIL_SOCKET_NAME_MAX */
        char **layers; /* bottom first */
        size_t n_layers;
        struct jail_bind *binds;
        size_t n_binds;
        char *agent;
        uint32_t uid_base, uid_count;
        char *cgroup; /* relative, components [A-Za-z0-9._-]+, no "." / ".." */
        uint64_t memory_bytes;
        uint64_t pids_max;
        int64_t cpu_quota_us; /* -1: unlimited */
        uint64_t cpu_period_us;
        uint64_t disk_bytes;
        int upper_on_host; /* the upper is mounted at rootfs in the host mount ns */
        char *disk_image;  /* NULL, or an ext4 image of disk_bytes that holds the upper */
        char **env;        /* NULL-terminated "KEY=value" strings, n_env of them */
        size_t n_env;
};

/* Parse and validate a spec. On success *ret_spec is owned by the caller (jail_spec_free).
 * On failure returns -EINVAL (or -ENOMEM) and points *ret_msg at a static description of the
 * first problem; *ret_spec is untouched. */
int jail_spec_parse(const char *json, size_t len, struct jail_spec **ret_spec,
                    const char **ret_msg);

/* Frees a spec and everything it owns. NULL is fine. */
struct jail_spec *jail_spec_free(struct jail_spec *spec);
static inline void jail_spec_freep(struct jail_spec **p)
{
        jail_spec_free(*p);
}
#define _cleanup_jail_spec_ __attribute__((cleanup(jail_spec_freep)))

/* Validators, exposed for tests. Return 1 when valid, 0 otherwise. */
int jail_id_valid(const char *id);
/* Absolute, at most JAIL_PATH_MAX, no "//", no "." or ".." components, no trailing '/'
 * (except "/" itself, which is accepted only when allow_root). */
int jail_path_valid(const char *path, int allow_root);
/* Relative, components [A-Za-z0-9_-]+ (no dots), depth <= 8, <= 255 bytes. */
int jail_cgroup_name_valid(const char *name);
