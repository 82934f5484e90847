#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Hook of templates/build.sh for "base": the layer sbx adds over the Debian rootfs
# (templates/debian/customize.sh made the rest): sbx's sudo client, sbx-sudo.c, as
# /usr/bin/sudo (0755 root, not set-uid: the agent runs the command; templates/README.md,
# "sudo"). Compiled here, statically (it then runs on whatever glibc the rootfs has), with the
# host's cc; SBX_SUDO_BIN (a binary built already) is used instead when set, and the static
# sbx-sudo installed beside this script (an installed builder: <prefix>/lib/sbx/templates/base)
# when there is one.
#   layer.sh LAYERDIR   build
#   layer.sh --inputs   print the inputs (for the build fingerprint)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$here/sbx-sudo.c
if [ -z "${SBX_SUDO_BIN:-}" ] && [ -x "$here/sbx-sudo" ]; then
  SBX_SUDO_BIN=$here/sbx-sudo
fi
if [ "${1:-}" = "--inputs" ]; then
  [ ! -f "$src" ] || echo "$src"
  [ -z "${SBX_SUDO_BIN:-}" ] || echo "$SBX_SUDO_BIN"
  exit 0
fi
[ $# -eq 1 ] || { echo "usage: layer.sh LAYERDIR | --inputs" >&2; exit 1; }
mkdir -p "$1/usr/bin"
if [ -n "${SBX_SUDO_BIN:-}" ]; then
  install -m 0755 "$SBX_SUDO_BIN" "$1/usr/bin/sudo"
else
  ${CC:-cc} -static -Os -s -Wall -Wextra -Werror -o "$1/usr/bin/sudo" "$src"
  chmod 0755 "$1/usr/bin/sudo"
fi
