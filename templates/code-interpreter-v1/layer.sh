#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Hook of templates/build.sh for "code-interpreter-v1": base's own layer (sbx's sudo) plus the
# code interpreter's kernels (kernels.sh), over the Debian rootfs and the kernels' packages
# (lower.sh).
#   layer.sh LAYERDIR   build
#   layer.sh --inputs   print the inputs (for the build fingerprint)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
base=$here/../base/layer.sh
if [ "${1:-}" = "--inputs" ]; then
  "$base" --inputs
  echo "$base"
  echo "$here/kernels.sh"
  "$here/kernels.sh" --inputs
  exit 0
fi
[ $# -eq 1 ] || { echo "usage: layer.sh LAYERDIR | --inputs" >&2; exit 1; }
"$base" "$1"
"$here/kernels.sh" "$1"
