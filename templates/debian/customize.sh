#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# mmdebstrap customize hook of debian/layer.sh rootfs: turns the fresh Debian root ROOT into
# what E2B's base image offers the default user. Runs on the host, as root, once per build.
set -eu
R=$1

# The default user: uid/gid 1000, home /home/user (the agent chowns it at start-up), bash; in
# the sudo group as on E2B (sudo itself is sbx's, templates/base/sbx-sudo.c).
getent_group() { grep -q "^$1:" "$R/etc/group"; }
getent_group sudo || chroot "$R" groupadd -g 27 sudo
chroot "$R" useradd -m -u 1000 -U -s /bin/bash -G sudo user
chmod 0755 "$R/home/user"

# sudo is sbx's client (it asks the agent to run the command as root): Debian's sudo package,
# should anyone install it, goes aside instead of replacing it.
chroot "$R" dpkg-divert --local --rename --divert /usr/bin/sudo.debian --add /usr/bin/sudo >/dev/null

# pip installs where the user asks, as on E2B's image (Debian marks its python as
# externally managed, PEP 668).
cat >"$R/etc/pip.conf" <<'P'
[global]
break-system-packages = true
P

# Man pages are not installed (path-exclude), but update-alternatives still links into
# man1 (the JDK's postinst fails without the directory).
mkdir -p "$R/usr/share/man/man1"

# Identity and name service of a sandbox (no network: DNS answers nothing, quickly).
echo sandbox >"$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$R/etc/hosts"
rm -f "$R/etc/resolv.conf"
echo "nameserver 127.0.0.1" >"$R/etc/resolv.conf"
echo "LANG=C.UTF-8" >"$R/etc/default/locale"
rm -f "$R/etc/machine-id" "$R/var/lib/dbus/machine-id"
chmod 0644 "$R/etc/pip.conf" "$R/etc/hostname" "$R/etc/hosts" "$R/etc/resolv.conf"
