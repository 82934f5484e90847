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
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define DISK_IMAGE_NAME "disk.img"
/* Pristine images kept (one per disk size); a sandbox of yet another size gets an image
 * formatted for it alone. */
#define DISK_IMAGE_CACHE_MAX 16

/* Whether sandboxes get image disks: loop devices and mkfs.ext4 work here (checked once by
 * formatting the pristine image of default_bytes). false: tmpfs uppers, with a warning. */
bool disk_image_probe(const char *state_dir, uint64_t default_bytes);

/* Write <dir>/disk.img, a fresh file system of bytes (made pristine first when needed). */
int disk_image_create(const char *state_dir, uint64_t bytes, const char *dir);

/* Remove <dir>/disk.img (gone already is fine). */
int disk_image_remove(const char *dir);
