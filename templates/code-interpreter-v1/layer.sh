#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Hook of templates/build.sh for "code-interpreter-v1": the base layer plus the code
# interpreter's kernels (guest-agent/interp/kernels/) at /opt/sbx/kernels, which is what makes
# sbx-agent serve port 49999 in a sandbox.
#   layer.sh LAYERDIR   build
#   layer.sh --inputs   print the host paths used (for the build fingerprint)
#
# Everything else comes from the host's /usr, bound read-only (scripts/deps.txt installs it):
# python3 with numpy, pandas, matplotlib, pillow; node; Debian's acorn and typescript
# (/usr/share/nodejs) for the JavaScript/TypeScript kernel; bash; R (r-base-core) and a JDK
# (default-jdk-headless: java, javac, the jdk.jshell module).
#
# Added to the layer:
#   home/user                        mode 0775: the kernels (root, the user's group) write there
#   etc/matplotlibrc                 Debian's matplotlib defaults (python3-matplotlib reads it
#                                    from /etc)
#   etc/R/                           R's site files: /usr/lib/R/etc links to them (R refuses to
#                                    start without Renviron)
#   opt/sbx/kernels/                 the kernels, byte-compiled (the layer is read-only)
#   opt/sbx/kernels/python/preload.txt
#                                    modules the prewarmed default python kernel imports
#                                    before the sandbox is handed out
#   opt/sbx/kernels/java/sbx-kernel.jar
#                                    the Java kernel, compiled here (javac)
#   opt/sbx/kernels/python/mpl-cache/fontlist-*.json
#                                    matplotlib's font list, built here once, copied into
#                                    ~/.cache/matplotlib by the kernel (saves ~0.4 s a sandbox)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
base=$here/../base/layer.sh
kernels=$(cd "$here/../../guest-agent/interp/kernels" && pwd)
PY=/usr/bin/python3
PRELOAD="numpy pandas matplotlib matplotlib.pyplot PIL.Image"

if [ "${1:-}" = "--inputs" ]; then
  "$base" --inputs
  echo "$base"
  echo "$kernels"
  echo /usr/share/fonts
  ls -d /etc/matplotlibrc /etc/R 2>/dev/null || true
  readlink -f /usr/bin/javac 2>/dev/null || true
  ls -d /usr/lib/python3/dist-packages/matplotlib/_version.py /usr/share/nodejs/typescript/package.json \
    /usr/share/nodejs/acorn/package.json 2>/dev/null || true
  exit 0
fi
[ $# -eq 1 ] || { echo "usage: layer.sh LAYERDIR | --inputs" >&2; exit 1; }
L=$1
umask 022

"$base" "$L"

# The kernels run as root without capabilities, in the default user's group: /home/user is
# group-writable so that they can write there (guest-agent/interp/code-kernel.h).
chmod 0775 "$L/home/user"

# Debian keeps matplotlib's default rc file in /etc (matplotlib refuses to import without it).
if [ -f /etc/matplotlibrc ]; then cp -a /etc/matplotlibrc "$L/etc/matplotlibrc"; fi
# Debian's R reads Renviron, Rprofile.site and ldpaths from /etc/R.
if [ -d /etc/R ]; then cp -a /etc/R "$L/etc/R"; fi

mkdir -p "$L/opt/sbx"
cp -a "$kernels" "$L/opt/sbx/kernels"
find "$L/opt/sbx/kernels" -name __pycache__ -prune -exec rm -rf {} +
echo "$PRELOAD" > "$L/opt/sbx/kernels/python/preload.txt"
"$PY" -m compileall -q "$L/opt/sbx/kernels/python" >/dev/null

# The Java kernel: compiled against the host's JDK (the sandbox runs the same /usr).
if command -v javac >/dev/null 2>&1 && command -v jar >/dev/null 2>&1; then
  jtmp=$(mktemp -d)
  if ! out=$(javac -d "$jtmp" "$kernels/java/SbxKernel.java" 2>&1); then
    echo "$out" >&2
    rm -rf "$jtmp"
    exit 1
  fi
  jar --create --file "$L/opt/sbx/kernels/java/sbx-kernel.jar" -C "$jtmp" .
  rm -rf "$jtmp"
fi

# matplotlib's font list for this host's fonts (the sandbox sees the same /usr/share/fonts).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if MPLCONFIGDIR=$tmp HOME=$tmp "$PY" -c 'import matplotlib.font_manager' 2>/dev/null; then
  mkdir -p "$L/opt/sbx/kernels/python/mpl-cache"
  cp "$tmp"/fontlist-*.json "$L/opt/sbx/kernels/python/mpl-cache/" 2>/dev/null || true
fi
chmod -R a+rX "$L/opt/sbx"
