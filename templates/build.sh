#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# templates/build.sh NAME DEST: build template NAME into DEST (DEST/template.json + DEST/layer/,
# and DEST/<lower>/ for each cached lower layer the template names).
#
#  - Runs templates/NAME/layer.sh LAYERDIR to populate its own layer, then installs
#    templates/NAME/template.json next to it.
#  - A template whose bottom layers are cached (the Debian ones) has templates/NAME/lower.sh:
#    it builds or finds them (templates/debian/layer.sh) and prints "LAYERNAME PATH" lines;
#    each is hard-linked into DEST/LAYERNAME (copied when the cache is on another mount).
#    lower.sh exiting 3 (no Debian mirror) makes this script exit 3 too, building nothing.
#  - Idempotent: DEST/.build-id fingerprints the builder scripts and the host files the hook
#    copies (path, size, mtime); an up-to-date DEST is left untouched (running sandboxes may be
#    using its layer as an overlay lower dir).
#  - Atomic: builds in a temp dir beside DEST, then renames it into place. A previous, different
#    DEST is moved aside to .NAME.old.<epoch>.<pid> next to DEST, never deleted here: sandboxes
#    started from it still read it. sbxd removes those once no sandbox uses them.
set -eu

die() { echo "templates/build.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: build.sh NAME DEST"
name=$1
dest=$2
here=$(cd "$(dirname "$0")" && pwd)
case $name in
  *[!A-Za-z0-9._-]* | .* | "") die "bad template name '$name'" ;;
esac
hook=$here/$name/layer.sh
config=$here/$name/template.json
[ -x "$hook" ] || die "no hook $hook"
[ -f "$config" ] || die "no config $config"
case $dest in /*) ;; *) dest=$(pwd)/$dest ;; esac
dest=${dest%/}
parent=$(dirname "$dest")
mkdir -p "$parent"

lowers=
if [ -x "$here/$name/lower.sh" ]; then
  set +e
  lowers=$("$here/$name/lower.sh")
  rc=$?
  set -e
  [ $rc -eq 0 ] || exit $rc
fi

# The hook prints the host paths it copies with "layer.sh --inputs".
build_id=$(
  {
    cat "$here/build.sh" "$hook" "$config"
    echo "$lowers"
    # shellcheck disable=SC2046
    find $("$hook" --inputs) -maxdepth 64 -printf '%p %s %T@ %l\n' 2>/dev/null | sort
  } | sha256sum | cut -d' ' -f1
)
if [ -f "$dest/template.json" ] && [ "$(cat "$dest/.build-id" 2>/dev/null)" = "$build_id" ]; then
  exit 0
fi

tmp=$(mktemp -d "$parent/.$name.tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 143' INT TERM # a stopped build leaves no half-built template (EXIT runs then)
chmod 0755 "$tmp"
echo "$lowers" | while read -r lname lpath; do
  [ -n "$lname" ] || continue
  case $lname in *[!A-Za-z0-9._-]* | .* | layer) die "bad lower layer name '$lname'" ;; esac
  cp -al "$lpath" "$tmp/$lname" 2>/dev/null || { rm -rf "$tmp/$lname"; cp -a "$lpath" "$tmp/$lname"; }
done
mkdir "$tmp/layer"
"$hook" "$tmp/layer"
cp "$config" "$tmp/template.json"
chmod 0644 "$tmp/template.json"
echo "$build_id" > "$tmp/.build-id"

if [ -e "$dest" ]; then
  mv -T "$dest" "$parent/.$name.old.$(date +%s).$$"
fi
mv -T "$tmp" "$dest"
trap - EXIT
