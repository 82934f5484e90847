#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# The code interpreter's part of a layer (both code-interpreter-v1 and code-interpreter-v1-host):
#   kernels.sh LAYERDIR [--mpl-cache]   add the kernels to LAYERDIR
#   kernels.sh --inputs                 print the inputs (for the build fingerprint)
#
#   home/user                        mode 0775: the kernels (root, the user's group) write there
#   opt/sbx/kernels/python/preload.txt
#                                    modules the prewarmed default python kernel imports
#                                    before the sandbox is handed out; its presence is what
#                                    makes /init prewarm it (the kernel programs themselves are
#                                    sbx's runtime, bound from the host in every sandbox:
#                                    guest-agent/README.md, "Runtime")
#   opt/sbx/kernels/java/sbx-kernel.jar
#                                    the Java kernel, compiled with the host's javac (Debian's
#                                    JDK of the same release as the sandbox's); cached in
#                                    $SBX_CACHE_DIR/kernels by the source's hash
#   opt/sbx/kernels/python/mpl-cache/fontlist-*.json  (--mpl-cache)
#                                    matplotlib's font list for the host's fonts, for a sandbox
#                                    that sees the host's /usr (the Debian template builds its
#                                    own in its packages layer)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# the source tree's kernels, else an installed builder's: <prefix>/share/sbx/kernels from
# <prefix>/lib/sbx/templates/code-interpreter-v1 (templates/meson.build)
if [ -d "$here/../../guest-agent/interp/kernels" ]; then
  kernels=$(cd "$here/../../guest-agent/interp/kernels" && pwd)
else
  kernels=$(cd "$here/../../../../share/sbx/kernels" && pwd)
fi
PY=/usr/bin/python3
PRELOAD="numpy pandas matplotlib matplotlib.pyplot PIL.Image IPython.lib.pretty"
cache=${SBX_CACHE_DIR:-/var/cache/sbx}/kernels

if [ "${1:-}" = "--inputs" ]; then
  echo "$kernels"
  echo "$here/kernel-jar.sh"
  readlink -f /usr/bin/javac 2>/dev/null || true
  exit 0
fi
[ $# -ge 1 ] || { echo "usage: kernels.sh LAYERDIR [--mpl-cache] | --inputs" >&2; exit 1; }
L=$1
umask 022

# The kernels run as root without capabilities, in the default user's group: /home/user is
# group-writable so that they can write there (guest-agent/interp/code-kernel.h).
mkdir -p "$L/home/user"
chmod 0775 "$L/home/user"

mkdir -p "$L/opt/sbx/kernels/python" "$L/opt/sbx/kernels/java"
echo "$PRELOAD" > "$L/opt/sbx/kernels/python/preload.txt"

# The Java kernel: prebuilt in an installed builder's kernels (copied above), else compiled once
# per source and JDK with the host's javac.
if [ -f "$L/opt/sbx/kernels/java/sbx-kernel.jar" ]; then
  :
elif command -v javac >/dev/null 2>&1 && command -v jar >/dev/null 2>&1; then
  key=$( { cat "$kernels/java/SbxKernel.java"; readlink -f "$(command -v javac)"; javac -version 2>&1; } |
    sha256sum | cut -c1-16)
  jarfile=$cache/sbx-kernel-$key.jar
  if [ ! -f "$jarfile" ]; then
    mkdir -p "$cache"
    "$here/kernel-jar.sh" "$kernels/java/SbxKernel.java" "$jarfile.tmp.$$"
    mv "$jarfile.tmp.$$" "$jarfile"
  fi
  cp "$jarfile" "$L/opt/sbx/kernels/java/sbx-kernel.jar"
fi

if [ "${2:-}" = "--mpl-cache" ]; then
  tmp=$(mktemp -d)
  if MPLCONFIGDIR=$tmp HOME=$tmp "$PY" -c 'import matplotlib.font_manager' 2>/dev/null; then
    mkdir -p "$L/opt/sbx/kernels/python/mpl-cache"
    cp "$tmp"/fontlist-*.json "$L/opt/sbx/kernels/python/mpl-cache/" 2>/dev/null || true
  fi
  rm -rf "$tmp"
fi
chmod -R a+rX "$L/opt/sbx"
