#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Hook of templates/build.sh for "code-interpreter-v1-host": the base-host layer plus the code
# interpreter's kernels (code-interpreter-v1/kernels.sh), for a sandbox whose /usr is the
# host's, bound read-only. Built by build-all.sh as "code-interpreter-v1" when no Debian mirror
# answers.
#   layer.sh LAYERDIR   build
#   layer.sh --inputs   print the host paths used (for the build fingerprint)
#
# Everything else comes from the host's /usr (scripts/deps.txt installs it): python3 with
# numpy, pandas, matplotlib, pillow; node; Debian's acorn and typescript (/usr/share/nodejs) for
# the JavaScript/TypeScript kernel; bash; R (r-base-core) and a JDK (default-jdk-headless).
#
# Added to the layer besides the kernels:
#   etc/matplotlibrc   Debian's matplotlib defaults (python3-matplotlib reads it from /etc)
#   etc/R/             R's site files: /usr/lib/R/etc links to them (R refuses to start
#                      without Renviron)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
base=$here/../base-host/layer.sh
kernels=$here/../code-interpreter-v1/kernels.sh

if [ "${1:-}" = "--inputs" ]; then
  "$base" --inputs
  echo "$base"
  echo "$kernels"
  "$kernels" --inputs
  echo /usr/share/fonts
  ls -d /etc/matplotlibrc /etc/R 2>/dev/null || true
  ls -d /usr/lib/python3/dist-packages/matplotlib/_version.py /usr/share/nodejs/typescript/package.json \
    /usr/share/nodejs/acorn/package.json 2>/dev/null || true
  exit 0
fi
[ $# -eq 1 ] || { echo "usage: layer.sh LAYERDIR | --inputs" >&2; exit 1; }
L=$1
umask 022

"$base" "$L"
"$kernels" "$L" --mpl-cache
if [ -f /etc/matplotlibrc ]; then cp -a /etc/matplotlibrc "$L/etc/matplotlibrc"; fi
if [ -d /etc/R ]; then cp -a /etc/R "$L/etc/R"; fi
