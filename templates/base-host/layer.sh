#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Hook of templates/build.sh for "base": populate LAYERDIR with the root skeleton of a sandbox
# whose /usr is the host's, bound read-only (template.json "binds").
#   layer.sh LAYERDIR   build
#   layer.sh --inputs   print the host paths copied (for the build fingerprint)
#
# The layer holds only what cannot come from /usr: merged-usr symlinks, empty mountpoints and
# scratch dirs, a generated identity (passwd, group, hosts, ...) and a whitelist of harmless host
# config that a working userland reads from /etc. Everything else in the host's /etc stays out:
# no shadow/gshadow, ssh (host keys), sudoers, machine-id, ssl/private, subuid/subgid, pam, and
# no tool configs that may hold credentials (pip.conf, npmrc, wgetrc, gitconfig) or describe
# host services (apache2, postgresql, systemd, cron, ...).
set -eu

# /etc entries copied verbatim (when present on the host), and why:
#   alternatives          symlink farm behind /usr/bin/python3, java, editor, ... (Debian)
#   profile profile.d bash.bashrc skel environment inputrc shells login.defs
#                         login shells, readline, the default environment, useradd/su defaults
#   ld.so.cache ld.so.conf ld.so.conf.d
#                         the dynamic linker's library search (cache matches the bound /usr)
#   localtime timezone    time zone (localtime links into /usr/share/zoneinfo)
#   ssl/certs ssl/openssl.cnf ca-certificates ca-certificates.conf
#                         public CA bundle and OpenSSL config for TLS clients (not ssl/private)
#   mime.types magic magic.mime mailcap
#                         content-type detection (python mimetypes, file(1))
#   protocols services networks ethertypes rpc host.conf gai.conf nsswitch-independent
#                         netdb tables that getaddrinfo/getservbyname read
#   debian_version os-release lsb-release issue
#                         distribution identity (os-release links into /usr/lib)
#   locale.alias locale.gen
#                         locale names
#   python3 python3.* perl java-*-openjdk fonts terminfo vim xdg
#                         per-package defaults read from /etc by interpreters and tools
ETC_WHITELIST="alternatives profile profile.d bash.bashrc skel environment inputrc shells
login.defs ld.so.cache ld.so.conf ld.so.conf.d localtime timezone ssl/certs ssl/openssl.cnf
ca-certificates ca-certificates.conf mime.types magic magic.mime mailcap protocols services
networks ethertypes rpc host.conf gai.conf debian_version os-release lsb-release issue
locale.alias locale.gen python3 python3.* perl java-*-openjdk fonts terminfo vim xdg"

present() { # print the whitelist entries that exist on this host, relative to /etc
  cd /etc
  for e in $ETC_WHITELIST; do
    # globs expand here; a literal that does not exist is skipped
    for p in $e; do
      if [ -e "$p" ] || [ -L "$p" ]; then echo "$p"; fi
    done
  done
}

if [ "${1:-}" = "--inputs" ]; then
  present | sed 's|^|/etc/|'
  exit 0
fi
[ $# -eq 1 ] || { echo "usage: layer.sh LAYERDIR | --inputs" >&2; exit 1; }
L=$1
umask 022

# Merged /usr: the host's layout decides which lib dirs exist.
for d in bin sbin lib lib64 lib32 libx32; do
  if [ -d "/usr/$d" ]; then ln -s "usr/$d" "$L/$d"; fi
done

# Mountpoints (the jailer mounts /proc, /dev, /usr; /sys stays empty) and scratch dirs.
mkdir -p "$L/usr" "$L/proc" "$L/dev" "$L/sys" "$L/run" "$L/mnt" "$L/opt" "$L/srv" "$L/etc" \
  "$L/var/lib" "$L/var/cache" "$L/var/log" "$L/var/tmp" "$L/tmp" "$L/home/user" "$L/root"
chmod 0555 "$L/proc" "$L/sys"
chmod 1777 "$L/tmp" "$L/var/tmp"
chmod 0700 "$L/root"
# Owned by root here (host root, which the sandbox sees as its root through the idmapped
# layer); the agent chowns /home/user to 1000:1000 at start-up, copying up only the directory.
chmod 0755 "$L/home/user"
ln -s ../run "$L/var/run"
ln -s ../run/lock "$L/var/lock"

# Whitelisted host config, keeping symlinks, modes and root ownership.
present | (cd /etc && xargs -r cp -a --parents -t "$L/etc")
rm -rf "$L/etc/ssl/private"

# Generated identity and name service.
cat > "$L/etc/passwd" <<'P'
root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
bin:x:2:2:bin:/bin:/usr/sbin/nologin
sys:x:3:3:sys:/dev:/usr/sbin/nologin
user:x:1000:1000::/home/user:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
P
cat > "$L/etc/group" <<'G'
root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:
tty:x:5:
disk:x:6:
staff:x:50:
users:x:100:user
user:x:1000:
nogroup:x:65534:
G
cat > "$L/etc/hosts" <<'H'
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
H
# No network: DNS answers nothing, quickly.
echo "nameserver 127.0.0.1" > "$L/etc/resolv.conf"
echo "sandbox" > "$L/etc/hostname"
cat > "$L/etc/nsswitch.conf" <<'N'
passwd:         files
group:          files
shadow:         files
gshadow:        files
hosts:          files dns
networks:       files
protocols:      files
services:       files
ethers:         files
rpc:            files
N
ln -s ../proc/self/mounts "$L/etc/mtab"
chmod 0644 "$L/etc/passwd" "$L/etc/group" "$L/etc/hosts" "$L/etc/resolv.conf" \
  "$L/etc/hostname" "$L/etc/nsswitch.conf"
