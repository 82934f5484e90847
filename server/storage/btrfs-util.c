/* SPDX-License-Identifier: Apache-2.0 */
#include "storage/btrfs-util.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>

#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>

#include "macros.h"

int btrfs_is_btrfs(int fd)
{
        struct statfs sf;
        if (fstatfs(fd, &sf) < 0)
                return -errno;
        return sf.f_type == BTRFS_SUPER_MAGIC;
}

int btrfs_quota_enable(int fd)
{
        struct btrfs_ioctl_quota_ctl_args a = {.cmd = BTRFS_QUOTA_CTL_ENABLE};
        if (ioctl(fd, BTRFS_IOC_QUOTA_CTL, &a) < 0)
                return -errno;
        /* quotas enabled on a file system that holds data start with a rescan of every
         * extent, during which limits are not enforced: wait for it (at once when none runs) */
        return ioctl(fd, BTRFS_IOC_QUOTA_RESCAN_WAIT, NULL) < 0 ? -errno : 0;
}

int btrfs_subvol_id(int fd, uint64_t *ret)
{
        struct btrfs_ioctl_ino_lookup_args a = {.treeid = 0, .objectid = BTRFS_FIRST_FREE_OBJECTID};
        if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &a) < 0)
                return -errno;
        *ret = a.treeid;
        return 0;
}

static int set_name(struct btrfs_ioctl_vol_args_v2 *a, const char *name)
{
        if (!*name || strlen(name) > BTRFS_SUBVOL_NAME_MAX || strchr(name, '/'))
                return -EINVAL;
        strcpy(a->name, name);
        return 0;
}

/* The inherit block that sets the new qgroup's limit at creation, in the same transaction as
 * the subvolume: there is no moment when it exists without its limit. */
static void fill_limit(struct btrfs_qgroup_inherit *in, struct btrfs_ioctl_vol_args_v2 *a,
                       uint64_t limit_bytes)
{
        if (!limit_bytes)
                return;
        *in = (struct btrfs_qgroup_inherit){
            .flags = BTRFS_QGROUP_INHERIT_SET_LIMITS,
            .lim = {.flags = BTRFS_QGROUP_LIMIT_MAX_RFER, .max_rfer = limit_bytes},
        };
        a->flags |= BTRFS_SUBVOL_QGROUP_INHERIT;
        a->size = sizeof(*in);
        a->qgroup_inherit = in;
}

int btrfs_subvol_create(int dir_fd, const char *name, uint64_t limit_bytes)
{
        struct btrfs_ioctl_vol_args_v2 a = {};
        struct btrfs_qgroup_inherit l;
        int r = set_name(&a, name);
        if (r < 0)
                return r;
        fill_limit(&l, &a, limit_bytes);
        return ioctl(dir_fd, BTRFS_IOC_SUBVOL_CREATE_V2, &a) < 0 ? -errno : 0;
}

int btrfs_snapshot(int src_fd, int dir_fd, const char *name, bool readonly, uint64_t limit_bytes)
{
        struct btrfs_ioctl_vol_args_v2 a = {.fd = src_fd};
        struct btrfs_qgroup_inherit l;
        int r = set_name(&a, name);
        if (r < 0)
                return r;
        if (readonly)
                a.flags |= BTRFS_SUBVOL_RDONLY;
        fill_limit(&l, &a, limit_bytes);
        return ioctl(dir_fd, BTRFS_IOC_SNAP_CREATE_V2, &a) < 0 ? -errno : 0;
}

int btrfs_subvol_delete(int dir_fd, const char *name)
{
        struct btrfs_ioctl_vol_args_v2 a = {};
        int r = set_name(&a, name);
        if (r < 0)
                return r;
        return ioctl(dir_fd, BTRFS_IOC_SNAP_DESTROY_V2, &a) < 0 ? -errno : 0;
}

int btrfs_qgroup_set_limit(int fd, uint64_t limit_bytes)
{
        struct btrfs_ioctl_qgroup_limit_args a = {
            .qgroupid = 0, /* the subvolume of fd */
            .lim = {.flags = BTRFS_QGROUP_LIMIT_MAX_RFER,
                    .max_rfer = limit_bytes ? limit_bytes : (uint64_t)-1},
        };
        return ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &a) < 0 ? -errno : 0;
}

/* One item of the quota tree, (0, type, qgroupid), into buf; -ENOENT when absent. */
static int quota_item(int fd, uint8_t type, uint64_t qgroupid, void *buf, size_t len)
{
        struct btrfs_ioctl_search_args a = {
            .key = {.tree_id = BTRFS_QUOTA_TREE_OBJECTID,
                    .min_objectid = 0,
                    .max_objectid = 0,
                    .min_type = type,
                    .max_type = type,
                    .min_offset = qgroupid,
                    .max_offset = qgroupid,
                    .max_transid = (uint64_t)-1,
                    .nr_items = 1},
        };
        if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, &a) < 0)
                return -errno;
        if (a.key.nr_items < 1)
                return -ENOENT;
        const struct btrfs_ioctl_search_header *h = (const void *)a.buf;
        if (h->type != type || h->offset != qgroupid || h->len < len)
                return -ENOENT;
        memcpy(buf, a.buf + sizeof(*h), len);
        return 0;
}

int btrfs_qgroup_usage(int fd, uint64_t subvol_id, uint64_t *ret_rfer, uint64_t *ret_excl,
                       uint64_t *ret_limit)
{
        struct btrfs_qgroup_info_item info;
        struct btrfs_qgroup_limit_item lim;
        int r = quota_item(fd, BTRFS_QGROUP_INFO_KEY, subvol_id, &info, sizeof(info));
        if (r < 0)
                return r;
        uint64_t max = 0;
        if (quota_item(fd, BTRFS_QGROUP_LIMIT_KEY, subvol_id, &lim, sizeof(lim)) >= 0 &&
            (le64toh(lim.flags) & BTRFS_QGROUP_LIMIT_MAX_RFER) &&
            le64toh(lim.max_rfer) != (uint64_t)-1)
                max = le64toh(lim.max_rfer);
        *ret_rfer = le64toh(info.rfer);
        *ret_excl = le64toh(info.excl);
        *ret_limit = max;
        return 0;
}

int btrfs_fsid(int fd, char ret[static 37])
{
        struct btrfs_ioctl_fs_info_args a = {};
        if (ioctl(fd, BTRFS_IOC_FS_INFO, &a) < 0)
                return -errno;
        const unsigned char *u = a.fsid;
        snprintf(ret, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                 u[13], u[14], u[15]);
        return 0;
}

int btrfs_resize_max(int fd)
{
        struct btrfs_ioctl_vol_args a = {};
        strcpy(a.name, "1:max");
        return ioctl(fd, BTRFS_IOC_RESIZE, &a) < 0 ? -errno : 0;
}
