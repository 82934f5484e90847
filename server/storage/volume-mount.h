/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The host side of a volume (storage/volume.h): its ext4 image mounted once at a directory of
 * the state dir, on a loop device. Pure host file-system work, no table.
 */
#pragma once

#include <stdbool.h>

/* Mount image (ext4) at mnt, nosuid,nodev,noatime, private propagation. The loop device is
 * the one already backed by image when there is one (a mount left by an earlier sbxd, or one
 * a sandbox still holds: mounting that device again gives the same file system instance, never
 * a second one over the same blocks), else a new one with autoclear (it goes with the last
 * unmount). -errno. */
int volume_mount_image(const char *image, const char *mnt);
/* Unmount mnt (lazily when busy). 0 when it was not mounted. */
int volume_umount(const char *mnt);
/* Whether mnt is a mount point (its device differs from its parent's). */
bool volume_is_mounted(const char *mnt);
