#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/package/root.sh CACHE: a fresh Debian root of the host's release to install the package
# into and boot with systemd-nspawn, built with mmdebstrap once per fingerprint and kept in
# CACHE/root-<fingerprint> (the fingerprint: this script, the host's Debian apt sources, the
# architecture). Prints its path. The root holds systemd, dbus, man-db (systemd-analyze verify
# opens the units' man: pages) and apt with the host's apt sources and keys, so that apt
# resolves the package's dependencies from the same archive as the host and the template
# builder's Debian layers have the fingerprint the host's have; its package lists are kept. It
# is never changed: the suite
# runs on an overlay of it. Exit 3 when no Debian mirror answers and no root is cached.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=$1
sources=$(python3 "$here/../../templates/debian/sources.py") || exit 3
arch=$(dpkg --print-architecture)
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
fp=$({
        cat "$0"
        echo "$sources $arch $codename"
        apt-config dump 2>/dev/null | grep -E '^Acquire::(Check-Valid-Until|Check-Date) ' || true
} | sha256sum | cut -c1-16)
out=$cache/root-$fp
say() { echo "package: $*" >&2; }

if [ -d "$out" ]; then
        echo "$out"
        exit 0
fi
mkdir -p "$cache"
exec 9>"$cache/.root.lock"
flock 9
if [ -d "$out" ]; then
        echo "$out"
        exit 0
fi
tmp=$(mktemp -d "$cache/.root.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "$sources" >"$tmp/sources.list"
# the host's apt settings that decide whether its archive answers at all: proxies, and the date
# checks a snapshot mirror needs turned off; the root keeps them
hostapt=$(apt-config dump 2>/dev/null |
        grep -E '^Acquire::((http|https|ftp)::Proxy|Check-Valid-Until|Check-Date) ' || true)
aptopts=()
while IFS= read -r line; do
        [ -z "$line" ] || aptopts+=(--aptopt="$line")
done <<<"$hostapt"
say "building the test root (Debian $codename with systemd) with mmdebstrap, once per fingerprint"
# --skip=cleanup/apt/lists: the package lists stay, so that apt still resolves the package's
# dependencies (from the suite's .deb cache) while the mirror does not answer
mmdebstrap --variant=apt --mode=root --format=directory --arch="$arch" \
        --include=systemd,systemd-sysv,dbus,libpam-systemd,man-db,ca-certificates \
        --skip=cleanup/apt/lists \
        --aptopt='APT::Install-Recommends "false"' "${aptopts[@]}" \
        "$codename" "$tmp/root" "$tmp/sources.list" >&2 || {
        say "mmdebstrap failed (is a Debian mirror reachable?)"
        exit 3
}
# the host's apt sources and keys, as its files (templates/debian/sources.py reads them)
rm -f "$tmp/root/etc/apt/sources.list"
cp -a /etc/apt/sources.list.d/. "$tmp/root/etc/apt/sources.list.d/"
[ ! -f /etc/apt/sources.list ] || cp /etc/apt/sources.list "$tmp/root/etc/apt/sources.list"
find "$tmp/root/etc/apt/sources.list.d" -name '*.disabled*' -delete
[ -z "$hostapt" ] || echo "$hostapt" >"$tmp/root/etc/apt/apt.conf.d/99host"
# man-db rebuilds its whole index on every install and removal (a minute each on a loaded
# machine): off, as Debian's own CI has it; man still finds the pages without the index
rm -f "$tmp/root/var/lib/man-db/auto-update"
# a container needs no getty, and the console's login prompt would only clutter the log
rm -f "$tmp/root/etc/systemd/system/getty.target.wants/"*
echo "sbx-pkgtest" >"$tmp/root/etc/hostname"
mv -T "$tmp/root" "$out"
for old in "$cache"/root-*; do
        [ "$old" = "$out" ] || rm -rf "$old"
done
say "test root ready: $out"
echo "$out"
