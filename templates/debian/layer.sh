#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Cached Debian layers for the templates (templates/README.md, "Debian layers"):
#
#   debian/layer.sh rootfs PKGFILE [HOOK]        a Debian root file system of the host's
#                                                release, built with mmdebstrap
#   debian/layer.sh packages LOWER PKGFILE [HOOK] the packages of PKGFILE installed over the
#                                                layer LOWER, as an overlay upper: a layer
#                                                that stacks on LOWER
#
# Prints the path of the cached layer (a directory tree, owned by root) on stdout. A layer is
# built once per fingerprint of its inputs (this script, PKGFILE, HOOK, the host's Debian apt
# sources for its release, the architecture and, for "packages", LOWER's own name) and kept in
# $SBX_CACHE_DIR/debian (default /var/cache/sbx, mode 0700); a later call with the same inputs
# prints the same path at once. Builds take a lock, so concurrent callers build once. Layers
# of other fingerprints unused for a day are removed once a new one is built (template dirs
# hold hard links to the files, never the cache's paths).
#
# HOOK (optional) runs as "HOOK ROOT" on the finished tree (rootfs: mmdebstrap's customize
# hook; packages: inside the overlay, with ROOT the merged view, before it is unmounted).
#
# Exit status: 0; 3 when no Debian mirror of the host's apt sources answers (the caller falls
# back to the host-/usr templates); 1 on any other failure. Progress goes to stderr.
#
#   debian/layer.sh --name rootfs|packages ...   the cache entry's name those arguments make
#                                                (LOWER need not exist), nothing built
#                                                (tests/package seeds its cache with it)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${SBX_CACHE_DIR:-/var/cache/sbx}/debian
say() { echo "templates: $*" >&2; }
die() { say "$*"; exit 1; }

name_only=
if [ "${1:-}" = --name ]; then
        name_only=1
        shift
fi
[ $# -ge 2 ] || die "usage: debian/layer.sh [--name] rootfs PKGFILE [HOOK] | packages LOWER PKGFILE [HOOK]"
kind=$1
shift
case $kind in
rootfs) lower= ;;
packages)
        if [ -n "$name_only" ]; then lower=$1; else lower=$(cd "$1" && pwd); fi
        shift
        ;;
*) die "unknown layer kind '$kind'" ;;
esac
pkgfile=$1
hook=${2:-}
[ -f "$pkgfile" ] || die "no package list $pkgfile"
[ -z "$hook" ] || [ -x "$hook" ] || die "hook $hook is not executable"
pkgs=$(sed 's/#.*//' "$pkgfile" | awk 'NF {print $1}' | sort -u | paste -sd, -)
[ -n "$pkgs" ] || die "$pkgfile lists no package"

sources=$(python3 "$here/sources.py") || exit 3
arch=$(dpkg --print-architecture)
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
fp=$( {
        cat "$0" "$here/customize.sh" "$here/strip-privs.py" "$here/sources.py" "$pkgfile"
        [ -z "$hook" ] || cat "$hook"
        echo "$sources"
        echo "$arch $codename $kind ${lower##*/}"
} | sha256sum | cut -c1-16)
# Named after the template whose package list it is (templates/NAME/packages.txt), so that
# layers of other templates are never pruned below.
label=$(basename "$(cd "$(dirname "$pkgfile")" && pwd)")
name=$label-$kind-$fp
out=$cache/$name
if [ -n "$name_only" ]; then
        echo "$name"
        exit 0
fi

if [ -d "$out" ]; then
        touch "$out.seconds" 2>/dev/null || true # last use, for the pruning below
        echo "$out"
        exit 0
fi

mkdir -p "$cache"
chmod 0700 "${cache%/debian}" "$cache"
exec 9>"$cache/.lock"
flock 9
if [ -d "$out" ]; then # built by another caller while we waited
        echo "$out"
        exit 0
fi

# The mirror must answer before anything is built: every entry's InRelease, 15 s each.
while read -r uri suite; do
        case $uri in
        http://* | https://*)
                if ! curl -fsS -o /dev/null --max-time 15 "$uri/dists/$suite/InRelease" 2>/dev/null; then
                        say "the Debian mirror $uri ($suite) is unreachable"
                        exit 3
                fi
                ;;
        esac
done < <(python3 "$here/sources.py" --uris)

# The host's apt proxy settings, if any, for mmdebstrap's apt and the chroot's.
aptopts=()
while IFS= read -r line; do
        aptopts+=(--aptopt="$line")
done < <(apt-config dump 2>/dev/null | grep -E '^Acquire::(http|https|ftp)::Proxy ' || true)

tmp=$(mktemp -d "$cache/.tmp-$kind.XXXXXX")
# Whatever ends it (a failure, or SIGTERM: sbx-templates.service stopped by a package removal or
# a shutdown), the half-built tree goes; never into a mount a killed mmdebstrap left behind.
cleanup() {
        rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
started=$SECONDS

if [ "$kind" = rootfs ]; then
        say "building the Debian $codename base with mmdebstrap (once per machine; a few minutes)"
        echo "$sources" >"$tmp/sources.list"
        customize=("--customize-hook=$here/customize.sh \"\$1\"")
        [ -z "$hook" ] || customize+=("--customize-hook=$hook \"\$1\"")
        mmdebstrap --variant=apt --mode=root --format=directory --arch="$arch" \
                --include="$pkgs" \
                --aptopt='APT::Install-Recommends "false"' "${aptopts[@]}" \
                --dpkgopt='path-exclude=/usr/share/doc/*' \
                --dpkgopt='path-include=/usr/share/doc/*/copyright' \
                --dpkgopt='path-exclude=/usr/share/man/*' \
                --dpkgopt='path-exclude=/usr/share/info/*' \
                "${customize[@]}" \
                "$codename" "$tmp/tree" "$tmp/sources.list" >&2 ||
                die "mmdebstrap failed (see above)"
else
        say "installing $(echo "$pkgs" | tr , ' ') over ${lower##*/} (once per machine)"
        mkdir "$tmp/upper" "$tmp/work" "$tmp/merged"
        # A private mount namespace: the overlay and its binds vanish with it, whatever happens.
        SBX_PKGS=$pkgs SBX_HOOK=$hook unshare --mount --propagation private -- bash -euo pipefail -c '
                t=$1 lower=$2
                m=$t/merged
                mount -t overlay overlay -o "lowerdir=$lower,upperdir=$t/upper,workdir=$t/work" "$m"
                mount -t proc proc "$m/proc"
                mount --rbind /dev "$m/dev"
                mount -t tmpfs tmpfs "$m/tmp"
                mount -t tmpfs tmpfs "$m/run"
                mount --bind /etc/resolv.conf "$m/etc/resolv.conf"
                export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
                chroot "$m" apt-get -q update
                chroot "$m" apt-get -q install -y --no-install-recommends $(echo "$SBX_PKGS" | tr , " ")
                chroot "$m" apt-get clean
                rm -rf "$m"/var/lib/apt/lists/* "$m"/var/cache/apt/*.bin
                if [ -n "$SBX_HOOK" ]; then "$SBX_HOOK" "$m"; fi
        ' _ "$tmp" "$lower" >&2 || die "installing $pkgs over $lower failed (see above)"
        # The work dir holds overlayfs bookkeeping only.
        mv "$tmp/upper" "$tmp/tree"
fi

python3 "$here/strip-privs.py" "$tmp/tree"
chmod 0755 "$tmp/tree"
mv -T "$tmp/tree" "$out"
secs=$((SECONDS - started))
echo "$secs" >"$out.seconds"
say "built $name in ${secs} s ($(du -sh "$out" | cut -f1), cached in $cache)"
# Other fingerprints of the same kind that nobody used for a day: template dirs hold hard links,
# not these paths. One used lately stays: another checkout of another version (a branch, a
# second worktree) builds with it, and removing it would make the two rebuild in turn.
for old in "$cache/$label-$kind"-*; do
        case $old in "$out" | *.seconds) continue ;; esac
        if [ -z "$(find "$old.seconds" -mmin -1440 2>/dev/null)" ]; then
                rm -rf --one-file-system "$old" "$old.seconds"
        fi
done
echo "$out"
