/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The jail spec: what sbxd asks of whoever builds a sandbox (today sbx-jailer, on its spec fd;
 * a VMM could take the same spec). Wire format, fields and bounds: api/jail-spec.md.
 *
 * One struct, one encoder (sbxd), one decoder (the jailer). The decoder trusts nothing: every
 * field is type-checked and bounded, every path absolute and normalised, so the jailer can use
 * the struct as is. The encoder writes what it is given; a spec the decoder would refuse is
 * refused on the jailer's side, in its `read-spec` step, as before the contract was typed.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jail-egress.h"

#define SBX_JAIL_SPEC_MAX        (1024 * 1024) /* bytes of JSON accepted on the spec fd */
#define SBX_JAIL_ID_MAX          63            /* [a-z0-9]{1,63}: also the hostname */
#define SBX_JAIL_PATH_MAX        1024          /* host paths and bind targets */
#define SBX_JAIL_SOCKET_NAME_MAX 64            /* last component of the socket path */
#define SBX_JAIL_CGROUP_MAX      255           /* bytes of the relative cgroup name */
#define SBX_JAIL_CGROUP_DEPTH    8             /* its components */
#define SBX_JAIL_LAYERS_MAX      64
#define SBX_JAIL_BINDS_MAX       32
#define SBX_JAIL_VOLUMES_MAX     16
#define SBX_JAIL_ENV_MAX         256
#define SBX_JAIL_ENV_NAME_MAX    255
#define SBX_JAIL_ENV_VALUE_MAX   (32 * 1024)
/* Below 65536 live the host's system and login users: sandbox root must never map onto one. */
#define SBX_JAIL_UID_BASE_MIN 65536u
/* The sandbox needs ids 0 (root), 1000 (user) and 65534 (nobody). */
#define SBX_JAIL_UID_COUNT_MIN  65536u
#define SBX_JAIL_MEMORY_MIN     (16ULL * 1024 * 1024)
#define SBX_JAIL_MEMORY_MAX     (1024ULL * 1024 * 1024 * 1024)
#define SBX_JAIL_PIDS_MIN       8
#define SBX_JAIL_PIDS_MAX       4194304
#define SBX_JAIL_CPU_PERIOD_MIN 1000 /* the kernel's range for cfs_period_us */
#define SBX_JAIL_CPU_PERIOD_MAX 1000000
#define SBX_JAIL_CPU_QUOTA_MIN  1000 /* or -1: unlimited */
#define SBX_JAIL_CPU_QUOTA_MAX  (1024LL * 1000000)
#define SBX_JAIL_DISK_MIN       (1024ULL * 1024)
#define SBX_JAIL_DISK_MAX       (1024ULL * 1024 * 1024 * 1024)

struct sbx_jail_bind {
        char *source; /* absolute host path */
        char *
            target; /* absolute path inside the sandbox: not "/", nor under /proc /dev /sys /.sbx */
        bool readonly;
};

/* A volume: a host directory (the root of the volume's file system, mounted on the host by
 * sbxd) mounted writable at target, idmapped through the sandbox's user namespace so that
 * on-disk owner N is sandbox uid N, whichever slot the sandbox has. */
struct sbx_jail_volume {
        char *source; /* absolute host path */
        char *target; /* as a bind's target */
};

struct sbx_jail_env {
        char *name; /* [A-Za-z_][A-Za-z0-9_]*, at most SBX_JAIL_ENV_NAME_MAX */
        char *value;
};

struct sbx_jail_spec {
        char *id;      /* [a-z0-9]{1,63} */
        char *rootfs;  /* empty host dir where the sandbox root is built */
        char *socket;  /* where the agent's listening socket is bound; any length, short name */
        char **layers; /* bottom first, read-only */
        size_t n_layers;
        struct sbx_jail_bind *binds;
        size_t n_binds;
        struct sbx_jail_volume *volumes;
        size_t n_volumes;
        char *agent;   /* the sbx-agent binary on the host */
        char *runtime; /* NULL, or a host dir bound read-only at /.sbx/runtime (sudo, kernels) */
        uint32_t uid_base, uid_count;
        char *cgroup; /* relative, components [A-Za-z0-9_-]+ */
        uint64_t memory_bytes;
        uint64_t pids_max;
        int64_t cpu_quota_us; /* -1: unlimited */
        uint64_t cpu_period_us;
        uint64_t disk_bytes;
        bool upper_on_host; /* the upper's file system is mounted at rootfs in the host mount ns */
        char *disk_image;   /* NULL, or an ext4 image of disk_bytes holding the upper */
        /* NULL, or a btrfs subvolume (with upper/, work/, lower/ in it, owned by on-disk 0)
         * holding the upper: bound idmapped through the sandbox's user namespace, so files are
         * stored with the ids the sandbox sees; excludes upper_on_host and disk_image */
        char *upper_subvol;
        struct sbx_jail_env *env; /* the agent's environment, in order */
        size_t n_env;
        struct sbx_jail_egress *egress; /* NULL: loopback only (api/jail-egress.h) */
};

/* Encode spec as one line of JSON (no newline) in *ret_text (caller frees), its length in
 * *ret_len. Every field is written, optional ones only when set (disk_image,
 * upper_subvol). -EINVAL when a
 * required string is NULL (nothing the decoder could read back), -ENOMEM. */
int sbx_jail_spec_encode(const struct sbx_jail_spec *spec, char **ret_text, size_t *ret_len);

/* Decode and validate text[0..len). On success *ret_spec is the caller's (sbx_jail_spec_free).
 * On failure -EINVAL (or -ENOMEM), *ret_msg pointing at a description of the first problem
 * (static storage, valid until the next call in the process), *ret_spec untouched. Unknown
 * fields are ignored, so an older decoder reads a newer encoder's spec. */
int sbx_jail_spec_decode(const char *text, size_t len, struct sbx_jail_spec **ret_spec,
                         const char **ret_msg);

/* The checks of the decoder on a struct: 0, or -EINVAL with *ret_msg as above. */
int sbx_jail_spec_validate(const struct sbx_jail_spec *spec, const char **ret_msg);

/* Field by field equality (tests, fuzzers). */
bool sbx_jail_spec_equal(const struct sbx_jail_spec *a, const struct sbx_jail_spec *b);

/* Frees a spec and everything it owns. NULL is fine. */
struct sbx_jail_spec *sbx_jail_spec_free(struct sbx_jail_spec *spec);
static inline void sbx_jail_spec_freep(struct sbx_jail_spec **p)
{
        sbx_jail_spec_free(*p);
}
#define _cleanup_jail_spec_ __attribute__((cleanup(sbx_jail_spec_freep)))

/* Validators, exposed for tests. */
/* [a-z0-9]{1,SBX_JAIL_ID_MAX}. */
bool sbx_jail_id_valid(const char *id);
/* Absolute, at most SBX_JAIL_PATH_MAX, no "//", no "." or ".." component, no trailing '/'
 * ("/" itself only when allow_root). */
bool sbx_jail_path_valid(const char *path, bool allow_root);
/* Relative, components [A-Za-z0-9_-]+ (no dots), at most SBX_JAIL_CGROUP_DEPTH of them and
 * SBX_JAIL_CGROUP_MAX bytes. */
bool sbx_jail_cgroup_name_valid(const char *name);
/* A valid path, not "/", not on or under /proc, /dev, /sys or /.sbx (the jailer's own). */
bool sbx_jail_bind_target_valid(const char *target);
/* [A-Za-z_][A-Za-z0-9_]*, at most SBX_JAIL_ENV_NAME_MAX. */
bool sbx_jail_env_name_valid(const char *name);
