#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lower.sh of "base" (templates/build.sh): the cached Debian rootfs of packages.txt, as the
# template's bottom layer "rootfs". Exit 3: no Debian mirror (build-all.sh falls back).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rootfs=$("$here/../debian/layer.sh" rootfs "$here/packages.txt")
echo "rootfs $rootfs"
