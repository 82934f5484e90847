/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The state dir: created owner-only, locked for one sbxd, and kept on a nosuid,nodev mount.
 *
 * Layers hold whatever sandboxes and images put there, set-id files owned by host root
 * included (a snapshot of a sandbox where root ran `chmod 4755`, a Debian image's sudo). Inside
 * a sandbox no_new_privs makes set-id bits inert; on the host, the state dir is bind-mounted
 * onto itself with nosuid,nodev so that they are inert there too, whatever the directory modes
 * or a file descriptor passed around allow. The mount is made at start (or found from an
 * earlier run) and detached when sbxd stops, unless sandboxes still running have their disks
 * mounted below it (sandboxes outlive sbxd): then it stays for the next sbxd.
 */
#pragma once

/* mkdir -p, chmod 0700, the sandboxes/, templates/ and layers/ subdirs, the lock (held until
 * exit), and the nosuid,nodev mount. Logs and returns -errno on failure. */
int state_dir_setup(const char *state);

/* Detach the nosuid bind mount (made by state_dir_setup() or found from an earlier run) if this
 * process holds the lock and no sandbox disk is mounted below. Called once, when sbxd stops. */
void state_dir_release(const char *state);

/* 1 when path lies on a nosuid,nodev mount, 0 when not, -errno on failure. */
int state_dir_is_protected(const char *path);
