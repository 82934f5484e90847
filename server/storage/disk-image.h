/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's disk: an ext4 image of disk_bytes at <dir>/disk.img, which the jailer mounts
 * on a loop device as the file system of the writable upper (jailer spec "disk_image"). A full
 * disk is ENOSPC and the page cache over it is reclaimable; a tmpfs upper, the fallback, is
 * memory charged to the sandbox, so filling it meets the OOM killer first.
 *
 * Images are sparse copies of a pristine one per size, <state>/disk-images/ext4-<bytes>,
 * formatted once by mkfs.ext4 (e2fsprogs; no journal: the upper does not outlive its
 * sandbox, a persisted or snapshotted one is copied out file by file). A copy writes only the
 * few hundred KiB of metadata mkfs wrote, so it costs about a millisecond. At most
 * DISK_IMAGE_CACHE_MAX sizes are kept.
 *
 * Admission. Sandbox disks live on the host's state disk; a loop device whose backing file
 * cannot grow loses writes that the sandbox was told had succeeded. So a disk is promised only
 * when the state disk can hold it: with overcommit 1 (the default) every image is preallocated
 * (fallocate: the blocks are reserved, nothing is written), and a new one must fit in the free
 * space less the reserve; writers inside a sandbox then meet ENOSPC of their own disk, never
 * the host's. With overcommit R > 1 (an explicit choice) images stay sparse and the sizes of
 * all of them may add up to R times what the disks could hold (free space plus what the images
 * already use, less the reserve); a full state disk then loses writes, which the log and
 * /metrics report (sampler). A refused disk is -ENOSPC (507) with a message saying why.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DISK_IMAGE_NAME "disk.img"
/* Volumes (storage/volume.h) are images too, <state>/volumes/<id>/disk.img, counted in the
 * same admission: a volume and a sandbox disk are promised the same free space. */
#define DISK_IMAGE_VOLUMES_DIR "volumes"
/* A volume's root directory owner (uid:gid as the sandbox sees them): the sandbox's user. */
#define VOLUME_ROOT_OWNER "1000:1000"
/* Pristine images kept (one per disk size); a sandbox of yet another size gets an image
 * formatted for it alone. */
#define DISK_IMAGE_CACHE_MAX 16

/* Whether sandboxes get image disks: loop devices and mkfs.ext4 work here (checked once by
 * formatting the pristine image of default_bytes). false: tmpfs uppers, with a warning. */
bool disk_image_probe(const char *state_dir, uint64_t default_bytes);

struct disk_policy {
        double overcommit;      /* >= 1 */
        uint64_t reserve_bytes; /* free space never promised */
};

/* What the state disk holds for sandbox disks right now. */
struct disk_usage {
        uint64_t free;     /* free space of the state file system */
        uint64_t promised; /* sum of the sizes of the images in <state>/{sandboxes,volumes} */
        uint64_t used;     /* what those images occupy */
        unsigned images;
};
int disk_image_usage(const char *state_dir, struct disk_usage *ret);

/* Write <dir>/disk.img, a fresh file system of bytes (made pristine first when needed), if the
 * state disk can take it under pol: -ENOSPC with errmsg saying why otherwise. */
int disk_image_create(const char *state_dir, uint64_t bytes, const char *dir,
                      const struct disk_policy *pol, char *errmsg, size_t errlen);

/* The same for a volume's image: formatted for it alone (with a journal: a volume outlives
 * sandboxes and restarts), its root owned by VOLUME_ROOT_OWNER. */
int disk_image_create_volume(const char *state_dir, uint64_t bytes, const char *dir,
                             const struct disk_policy *pol, char *errmsg, size_t errlen);

/* Remove <dir>/disk.img (gone already is fine). */
int disk_image_remove(const char *dir);
