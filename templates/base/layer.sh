#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Hook of templates/build.sh for "base": the layer sbx adds over the Debian rootfs. Empty for
# now: everything comes from the rootfs (templates/debian/customize.sh). sbx's sudo client
# (sbx-sudo.c) goes here once the agent serves its socket (templates/README.md, "sudo").
#   layer.sh LAYERDIR   build
#   layer.sh --inputs   print the inputs (for the build fingerprint)
set -eu
if [ "${1:-}" = "--inputs" ]; then
  exit 0
fi
[ $# -eq 1 ] || { echo "usage: layer.sh LAYERDIR | --inputs" >&2; exit 1; }
