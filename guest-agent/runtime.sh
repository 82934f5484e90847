#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Lay out the runtime dir that every sandbox gets read-only at /.sbx/runtime
# (guest-agent/README.md, "Runtime"):
#   runtime.sh OUTDIR SUDO KERNELS STAMP
#     OUTDIR/bin/sudo     SUDO, the static sudo client (templates/base/sbx-sudo.c)
#     OUTDIR/kernels/     KERNELS, the code interpreter's kernel programs (no caches)
# Files are replaced one by one (install's rename), never the directory: sandboxes running
# while it is rebuilt keep a working runtime. STAMP is touched last (the build's output).
set -eu
out=$1 sudo=$2 kernels=$3 stamp=$4
umask 022
mkdir -p "$out/bin" "$out/kernels"
install -m 0755 "$sudo" "$out/bin/sudo"
(cd "$kernels" && find . \( -name __pycache__ -o -name ".*" \) -prune -o -type f -print) | while read -r f; do
        install -D -m 0644 "$kernels/$f" "$out/kernels/$f"
done
touch "$stamp"
