#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/package/prepare.sh ROOT PORT CGROUP_PARENT CACHE: what the test adds to the fresh root before
# it boots (tests/package/README.md says why each is needed in a container on this machine):
#  - a drop-in for sbxd.service, in place before the package is installed: the packaged
#    ExecStart with --listen on PORT and --cgroup-parent CGROUP_PARENT (the container shares
#    the host's network and cgroup hierarchies with other sbxd), no warm pool (the suite's
#    time), a 1 GiB storage pool (preallocated); the packaged config file is read as on any
#    host, the command line winning;
#  - a drop-in for sbx-templates.service: the builder's cache (SBX_CACHE_DIR) at CACHE, on the
#    state dir's mount, so that the builder hard-links its cached Debian layers into templates
#    as it does on a host where both dirs are on one file system (two bind mounts would make it
#    copy gigabytes instead: no hard link crosses a mount);
#  - a unit that remounts the cgroup v1 controllers read-write before sbxd starts (nspawn
#    mounts them read-only in a container; on a host they are read-write for root).
set -euo pipefail
root=$1 port=$2 cgparent=$3 cachedir=$4
d=$root/etc/systemd/system
mkdir -p "$d/sbxd.service.d" "$d/sbx-templates.service.d" "$d/sysinit.target.wants"
cat >"$d/sbx-templates.service.d/pkgtest.conf" <<UNIT
# tests/package: the builder's cache on the state dir's mount
[Service]
Environment=SBX_CACHE_DIR=$cachedir
UNIT
cat >"$d/sbxd.service.d/pkgtest.conf" <<UNIT
# tests/package: this run's port and cgroup parent; no warm pool; a small storage pool
# (preallocated: by default a quarter of the free space), when this sbxd has one (an older
# build, the upgrade's first, may not); the shell execs sbxd, which stays the main process
[Service]
ExecStart=
ExecStart=/bin/sh -c 'pool=; /usr/sbin/sbxd --get storage-pool >/dev/null 2>&1 && pool="--storage-pool 1G"; exec /usr/sbin/sbxd --config /etc/sbx/sbxd.conf --listen 127.0.0.1:$port --cgroup-parent $cgparent --pool-size 0 \$\$pool'
UNIT
cat >"$d/pkgtest-cgroups.service" <<'UNIT'
# tests/package: the cgroup controllers read-write, as on a host (nspawn mounts them read-only)
[Unit]
Description=tests/package: cgroup controllers read-write
DefaultDependencies=no
Before=sysinit.target sbxd.service
[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for c in memory pids cpu cpuacct freezer; do [ ! -d /sys/fs/cgroup/$c ] || mount -o remount,bind,rw /sys/fs/cgroup/$c; done'
[Install]
WantedBy=sysinit.target
UNIT
ln -sf ../pkgtest-cgroups.service "$d/sysinit.target.wants/pkgtest-cgroups.service"
