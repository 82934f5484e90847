#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The package suite (tests/package/README.md): make deb, then the package installed into a
# fresh Debian root booted with systemd-nspawn, driven with apt, systemctl, journalctl, sbx and
# the npm e2b SDK: install, the file list, systemd-analyze verify, the packaged config, keys
# without a restart, reload, restart and an upgrade with a sandbox running, remove, purge.
#   tests/package/run.sh
# Prints "ok N - ..." / "not ok N - ..." lines, then "# pass N" and "# fail N".
# SBX_PKGTEST_DEB=FILE tests that package instead of building one.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/package
cache=${SBX_CACHE_DIR:-/var/cache/sbx}/pkgtest
# The whole suite in a mount namespace of its own: the overlay root and its binds vanish with it.
if [ -z "${SBX_PKGTEST_NS:-}" ]; then
        exec unshare --mount --propagation private env SBX_PKGTEST_NS=1 bash "$0" "$@"
fi
work=$(mktemp -d /var/tmp/sbx-pkgtest.XXXXXX)
machine=sbxpkg$$
cgparent=sbx-pkgtest-$$
n=0 pass=0 fail=0 npid= pid1=
started=$SECONDS last=$SECONDS

say() { echo "# $*"; }
result() { # ok|not, what, [details]: a TAP line, with the seconds since the one before
        n=$((n + 1))
        local took="[$((SECONDS - last)) s]"
        last=$SECONDS
        if [ "$1" = ok ]; then
                pass=$((pass + 1))
                echo "ok $n - $2 $took"
        else
                fail=$((fail + 1))
                echo "not ok $n - $2 $took"
                [ -z "${3:-}" ] || echo "$3" | tail -n 20 | sed 's/^/#   /'
        fi
}
check() { # what, command...: ok when the command succeeds; its output shown when not. A
        # check function stops at its first failing line (set -e, outside any if: bash ignores
        # -e in a condition)
        local what=$1 out rc
        shift
        out=$(
                set -e
                "$@" 2>&1
        )
        rc=$?
        if [ "$rc" -eq 0 ]; then result ok "$what"; else result not "$what" "$out"; fi
}
finish() {
        teardown
        say "package suite: $((SECONDS - started)) s"
        echo "# pass $pass"
        echo "# fail $fail"
        [ "$fail" -eq 0 ]
        exit
}
fatal() { # what, details: the rest cannot run
        result not "$1" "${2:-}"
        finish
}

# ---- inside the booted root ----
in_root() {
        nsenter -t "$pid1" -a -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
                DEBIAN_FRONTEND=noninteractive "$@"
}
apt_in_root() {
        in_root apt-get -q -y -o Dpkg::Options::=--force-confold --no-install-recommends "$@"
}
unit_prop() { in_root systemctl show -P "$2" "$1"; }
health() { curl -fsS --max-time 5 "http://127.0.0.1:$port/health"; }
key() { in_root sbx keys --e2b | sed -n 's/^export E2B_API_KEY=//p'; }
sdk() {
        E2B_API_URL=http://127.0.0.1:$port E2B_SANDBOX_URL=http://127.0.0.1:$port \
                E2B_API_KEY=$(key) timeout 120 node "$here/sdk.mjs" "$@"
}
status_with() { # key, path: the HTTP status of a GET with that key
        curl -s -o /dev/null -w '%{http_code}' -H "X-API-KEY: $1" "http://127.0.0.1:$port$2"
}
wait_for() { # seconds, command...: until it succeeds
        local until=$((SECONDS + $1))
        shift
        until "$@" >/dev/null 2>&1; do
                [ $SECONDS -lt $until ] || return 1
                sleep 0.5
        done
}
journal_has() { # unit, pattern, [since cursor file]
        in_root journalctl -q -u "$1" --no-pager -o cat | grep -qE "$2"
}

teardown() {
        if [ -n "$pid1" ] && kill -0 "$pid1" 2>/dev/null; then
                # sandboxes first: nothing of this run may outlive it
                for d in "$work"/state/sandboxes/*/; do
                        [ -d "$d" ] && curl -s -o /dev/null -X DELETE -H "X-API-KEY: $(key)" \
                                "http://127.0.0.1:$port/sandboxes/$(basename "$d")"
                done
                in_root systemctl poweroff >/dev/null 2>&1
        fi
        if [ -n "$npid" ]; then
                timeout 30 tail --pid="$npid" -f /dev/null || kill -KILL "$npid" 2>/dev/null
                wait "$npid" 2>/dev/null
        fi
        # the container's init outlives a killed nspawn (it is its pid namespace's init)
        [ -z "$pid1" ] || ! kill -0 "$pid1" 2>/dev/null || kill -KILL "$pid1"
        umount -R "$work/root" 2>/dev/null
        # the cgroups of this run: the sandboxes' parent, nspawn's payload/supervisor split
        find /sys/fs/cgroup -mindepth 1 -maxdepth 4 -type d -name "$cgparent" 2>/dev/null |
                sort -r | xargs -r rmdir 2>/dev/null
        local own
        for h in unified systemd; do
                own=/sys/fs/cgroup/$h$(sed -n "s/^[0-9]*:$([ $h = unified ] || echo name=systemd):\(.*\)/\1/p" /proc/self/cgroup)
                find "$own/payload" "$own/supervisor" -depth -type d -exec rmdir {} + 2>/dev/null
        done
        rm -rf --one-file-system "$work" # never into a root left mounted
}
trap 'finish' INT TERM

# ---- the package, and the build before it ----
mkdir -p "$work/debs" "$cache/debs" "$cache/archives/partial" "$cache/layers"
t=$SECONDS
if [ -n "${SBX_PKGTEST_DEB:-}" ]; then
        deb=$SBX_PKGTEST_DEB
        result ok "package given: $deb"
elif deb=$(DEB_BUILD_OPTIONS=nocheck bash "$top/scripts/build-deb.sh" "$work/build" \
        2>"$work/build-deb.log" | tail -n 1) && [ -f "$deb" ]; then
        result ok "make deb: $(basename "$deb") built, lintian without errors ($((SECONDS - t)) s)"
        grep 'lintian: [WE]:' "$work/build-deb.log" | sed 's/^/# /'
else
        fatal "make deb" "$(cat "$work/build-deb.log")"
fi
version=$(dpkg-deb -f "$deb" Version)
cp "$deb" "$work/debs/new.deb"
# The previous build: the newest one of an older version kept by an earlier run; else this one
# with an older version number (the upgrade then tests the package's scripts and sbxd's
# adoption, not two versions' records).
prev= prev_version=
for d in "$cache"/debs/sbx_*_amd64.deb; do
        [ -f "$d" ] || continue
        v=$(dpkg-deb -f "$d" Version)
        dpkg --compare-versions "$v" lt "$version" || continue
        if [ -z "$prev" ] || dpkg --compare-versions "$v" gt "$prev_version"; then
                prev=$d prev_version=$v
        fi
done
if [ -n "$prev" ]; then
        cp "$prev" "$work/debs/prev.deb"
        say "the upgrade starts from the previous build, $prev_version"
else
        prev_version=$version~prev
        dpkg-deb -R "$deb" "$work/repack" &&
                sed -i "s/^Version: .*/Version: $prev_version/" "$work/repack/DEBIAN/control" &&
                dpkg-deb -b "$work/repack" "$work/debs/prev.deb" >/dev/null
        say "no older build kept: the upgrade starts from this one as $prev_version"
fi
cp "$deb" "$cache/debs/" 2>/dev/null
ls -t "$cache"/debs/sbx_*_amd64.deb 2>/dev/null | tail -n +4 | xargs -r rm -f

# ---- a fresh Debian root, booted ----
base=$(bash "$here/root.sh" "$cache" 2>"$work/root.log") ||
        fatal "a fresh Debian root (mmdebstrap)" "$(cat "$work/root.log")"
mkdir -p "$work/upper" "$work/ovl" "$work/root" "$work/state/.cache/debian"
# The template builder's Debian layers (prepare.sh puts its cache in the state dir, so that its
# hard links work as on a host): the two this tree's builder names, hard-linked from the suite's
# own store or the machine's cache (the node suite's), whichever has them. The machine's is not
# the suite's to use directly: other checkouts prune fingerprints other than theirs.
layer=$top/templates/debian/layer.sh
rootfs=$(bash "$layer" --name rootfs "$top/templates/base/packages.txt" 2>/dev/null)
packages=$(bash "$layer" --name packages "/$rootfs" "$top/templates/code-interpreter-v1/packages.txt" \
        "$top/templates/code-interpreter-v1/packages-hook.sh" 2>/dev/null)
for l in $rootfs $packages; do
        for from in "$cache/layers" "${SBX_CACHE_DIR:-/var/cache/sbx}/debian"; do
                [ -d "$from/$l" ] || continue
                cp -al "$from/$l" "$work/state/.cache/debian/$l" 2>/dev/null && break
                rm -rf "$work/state/.cache/debian/$l"
        done
done
mount -t overlay overlay -o "lowerdir=$base,upperdir=$work/upper,workdir=$work/ovl" "$work/root" ||
        fatal "the overlay of the test root"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
bash "$here/prepare.sh" "$work/root" "$port" "$cgparent" /var/lib/sbx/.cache
SYSTEMD_SECCOMP=0 SYSTEMD_NSPAWN_API_VFS_WRITABLE=1 systemd-nspawn --boot -D "$work/root" \
        --register=no --keep-unit --machine="$machine" --capability=all \
        --bind="$work/state:/var/lib/sbx" \
        --bind="$cache/archives:/var/cache/apt/archives" --bind-ro="$work/debs:/debs" \
        </dev/null >"$work/nspawn.log" 2>&1 &
npid=$!
for _ in $(seq 100); do # the container's init: nspawn's child
        pid1=$(pgrep -P "$npid" -x systemd)
        [ -n "$pid1" ] && break
        sleep 0.2
done
[ -n "$pid1" ] || fatal "systemd-nspawn --boot" "$(cat "$work/nspawn.log")"
booted=
for _ in $(seq 240); do
        booted=$(in_root systemctl is-system-running 2>&1)
        case $booted in running | degraded) break ;; esac
        sleep 0.5
done
case $booted in
running | degraded) result ok "systemd-nspawn --boot: systemd runs the root ($booted)" ;;
*) fatal "systemd-nspawn --boot" "$(tail -n 12 "$work/nspawn.log")
is-system-running: $booted; jobs: $(in_root systemctl list-jobs --no-pager 2>&1)" ;;
esac

. "$here/checks.sh"
finish
