#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make deb: the Debian package of this tree with Debian's own tooling (dpkg-buildpackage, the
# debian/ directory), then lintian.
#   scripts/build-deb.sh [OUT]     OUT default build-deb; prints the .deb's path last
# The tree's files (git's, with files not yet committed; not the build dirs) are copied to
# OUT/src/sbx-VERSION, debian/changelog is written there with the version scripts/version.sh
# says, and the package is built in that copy; OUT/sbx_VERSION_amd64.deb is the result.
# DEB_BUILD_OPTIONS passes through (nocheck: no unit suite at build time). Lintian's errors
# fail the build; its warnings are printed (debian/sbx.lintian-overrides explains the ones
# kept).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
out=$(mkdir -p "${1:-build-deb}" && cd "${1:-build-deb}" && pwd)
base=$(sed -n "s/^ *version: '\([^']*\)',.*/\1/p" meson.build | head -n 1)
version=$(scripts/version.sh "$base")
stage=$out/src/sbx-$version
say() { echo "deb: $*" >&2; }

rm -rf "$out/src"
mkdir -p "$stage"
if git rev-parse --git-dir >/dev/null 2>&1; then
        commit=$(git rev-parse --short HEAD)
        git ls-files -z --cached --others --exclude-standard |
                tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$stage"
else
        commit="a tree outside git"
        tar --exclude='./build*' --exclude=./.git -cf - . | tar -xf - -C "$stage"
fi
cat >"$stage/debian/changelog" <<CHANGES
sbx ($version) unstable; urgency=medium

  * Built from $commit by scripts/build-deb.sh.

 -- sbx maintainers <maintainers@sbx.example.org>  $(date -R)
CHANGES

say "building sbx $version in $stage"
started=$SECONDS
(cd "$stage" && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} parallel=$(nproc)" \
        dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1 || {
        tail -n 40 "$out/build.log" >&2
        say "dpkg-buildpackage failed (whole log: $out/build.log)"
        exit 1
}
deb=sbx_${version}_amd64.deb
changes=$out/src/sbx_${version}_amd64.changes
say "built $deb in $((SECONDS - started)) s"

# lintian on the .changes: the package, and what the build says of it
if ! lintian --fail-on error "$changes" >"$out/lintian.log" 2>&1; then
        cat "$out/lintian.log" >&2
        say "lintian found errors (lintian -i explains each tag)"
        exit 1
fi
grep -v '^running with root privileges' "$out/lintian.log" | sed 's/^/  lintian: /' >&2 || true
mv "$out/src/$deb" "$out/$deb"
echo "$out/$deb"
