#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lower.sh of "code-interpreter-v1" (templates/build.sh): base's cached Debian rootfs, then the
# kernels' Debian packages (packages.txt) installed over it as a layer of their own. Exit 3: no
# Debian mirror (build-all.sh falls back).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
deb=$here/../debian/layer.sh
rootfs=$("$deb" rootfs "$here/../base/packages.txt")
packages=$("$deb" packages "$rootfs" "$here/packages.txt" "$here/packages-hook.sh")
echo "rootfs $rootfs"
echo "packages $packages"
