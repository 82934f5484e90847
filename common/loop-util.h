/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Attaching a disk image to a free loop device, for the jailer (a sandbox's upper disk) and
 * sbxd (a volume's image).
 */
#pragma once

#include <stddef.h>

#define LOOP_ATTACH_ATTEMPTS 32 /* free devices taken by another program first: tries */

/*
 * Attach the image open at img_fd (read-write) to a free loop device: LOOP_CTL_GET_FREE then
 * LOOP_CONFIGURE with LO_FLAGS_AUTOCLEAR (the device goes with the last unmount) and
 * LO_FLAGS_DIRECT_IO (the image's blocks are not cached twice). LOOP_CTL_GET_FREE hands the
 * same free device to everyone who asks before one configures it, so attachers take turns (an
 * flock on /dev/loop-control, held until the device is configured); a device another program
 * took meanwhile (EBUSY) is retried, LOOP_ATTACH_ATTEMPTS times at most (-EBUSY then).
 * 0 with the device's path in ret_dev (len bytes) and *ret_fd holding it open: closing it
 * without a mount detaches the device, once mounted the file system holds it. Else -errno.
 */
int loop_attach(int img_fd, char *ret_dev, size_t len, int *ret_fd);
