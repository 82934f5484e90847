/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's filesystem. The parent (host root, in a private mount namespace of its own)
 * builds everything that needs host credentials: the size-limited tmpfs upper, the overlay of
 * idmapped read-only layers, the binds, the agent, /dev. The child (in the new user and mount
 * namespaces) adds what must belong to its namespaces: /proc, devpts, the /proc masks, and
 * finally pivots into the root. Every path inside the root is resolved with openat2
 * (RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) from a dirfd of the root, so a symlink in a layer
 * can never point a mount outside it (CVE-2021-30465 class).
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "jail-spec.h"

/* Where the agent binary appears inside the sandbox (read-only bind of spec->agent). */
#define JAIL_AGENT_PATH "/.sbx/sbx-agent"
/* Where spec->runtime appears (read-only bind of a host dir: sudo, kernels). */
#define JAIL_RUNTIME_PATH "/.sbx/runtime"
/* The sandbox's own boot_id (escape battery G1): a fresh random UUID written there at every
 * start by the parent, bound read-only over /proc/sys/kernel/random/boot_id by the child, so
 * sandboxes, and clones started from one snapshot, never share it. */
#define JAIL_BOOT_ID_PATH "/.sbx/boot_id"

/* Parent: unshare(CLONE_NEWNS) and make every mount private, so nothing below ever propagates
 * to the host mount namespace. */
int jail_mount_private_ns(void);

/* Parent, before jail_mount_private_ns(), only when spec->upper_on_host: the file system that
 * holds the writable upper (the ext4 image spec->disk_image on a loop device, else a tmpfs of
 * spec->disk_bytes) is mounted at spec->rootfs in the host mount namespace (MS_PRIVATE,
 * nosuid,nodev), so sbxd can read the upper for snapshots without entering a namespace. sbxd
 * unmounts it at teardown (also after a failed start). */
int jail_mount_upper_host(const struct sbx_jail_spec *spec);

/* Parent: builds the root at spec->rootfs (overlay over a tmpfs upper of spec->disk_bytes),
 * binds, agent, /dev. userns_fd (the sandbox's user namespace, maps already written) is used to
 * idmap the read-only layers and the volumes, so that files owned by host root appear owned by
 * sandbox root; -1 disables idmapping. bind_userns_fd (maps only host uid_base/gid_base, as id
 * 0) idmaps the read-only binds of host directories: host root's files there are sandbox
 * root's, every other host id's are nobody's, out of reach of sandbox root's capabilities
 * (-1: binds are not idmapped). *ret_idmapped says whether idmapping took effect. */
int jail_mount_root(const struct sbx_jail_spec *spec, int userns_fd, int bind_userns_fd,
                    int *ret_idmapped);

/* Sandbox root's file-system ids (fsuid/fsgid = uid_base) with every capability kept
 * (SECBIT_NO_SETUID_FIXUP), for what the jailer writes into a root whose upper is a pool
 * subvolume: overlayfs creates its work dirs, whiteouts and copied-up files with its mounter's
 * credentials, and the jailer's own files (the agent's mount point, /etc/resolv.conf, boot_id,
 * the CA bundle) with the caller's; through an idmapped upper host root maps to nothing
 * (EOVERFLOW). Capabilities are untouched, so these are the operations host root would make,
 * with files owned by sandbox root, as the jailer chowns them anyway. jail_fs_become() returns
 * the securebits jail_fs_restore() puts back (host root's ids again), or -errno. */
int jail_fs_become(uid_t uid_base);
int jail_fs_restore(int bits);

/* /etc/resolv.conf in the root of root_fd replaced by "nameserver <gw4>" (the egress link's host
 * end, where sbxd's resolver answers), owned by uid; paths resolved inside the root. Used at
 * build (with egress) and by the egress attach of a running sandbox (jail-attach.h). */
int jail_mount_write_resolv_conf(int root_fd, uid_t uid, const uint8_t gw4[4]);

/* Parent, once the root is built: an O_PATH fd of rootfs, handed to the child. The path crosses
 * sbxd's 0700 root-owned state dir, which the child (host uid_base from birth) cannot search. */
int jail_mount_open_root(const char *rootfs);

/* Child: its own copy of the mounts (owned by its user namespace, every inherited mount
 * locked), and an O_PATH fd of root_fd's directory (from jail_mount_open_root()) in that copy:
 * the child enters root_fd, unshares, and opens its cwd, which the kernel moved into the new
 * namespace. Leaves the cwd there. */
int jail_mount_unshare_at(int root_fd);

/* Child: fresh /proc with the sensitive entries masked or read-only, and a new devpts
 * instance at /dev/pts. Must run before jail_mount_pivot (needs the host /proc visible). */
int jail_mount_proc(int root_fd);
int jail_mount_devpts(int root_fd);

/* Child: pivot_root into the root, detach the old root, chdir("/"). */
int jail_mount_pivot(int root_fd);
