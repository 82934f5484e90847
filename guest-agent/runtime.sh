#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Lay out the runtime dir that every sandbox gets read-only at /.sbx/runtime
# (guest-agent/README.md, "Runtime"):
#   runtime.sh OUTDIR SUDO KERNELS STAMP
#     OUTDIR/bin/sudo     SUDO, the static sudo client (templates/base/sbx-sudo.c)
#     OUTDIR/kernels/     KERNELS, the code interpreter's kernel programs, the Python ones
#                         byte-compiled
#   runtime.sh --install RELDIR SUDO KERNELS
#     the same at install time (meson's install script): OUTDIR is RELDIR under
#     $MESON_INSTALL_DESTDIR_PREFIX (the prefix, below DESTDIR when packaging)
# Files are replaced one by one (install's rename), never the directory: sandboxes running
# while it is rebuilt keep a working runtime. STAMP is touched last (the build's output).
set -eu
if [ "$1" = --install ]; then
        out=${MESON_INSTALL_DESTDIR_PREFIX:?not run by meson install}/$2 sudo=$3 kernels=$4 stamp=
else
        out=$1 sudo=$2 kernels=$3 stamp=$4
fi
umask 022
mkdir -p "$out/bin" "$out/kernels"
install -m 0755 "$sudo" "$out/bin/sudo"
(cd "$kernels" && find . -mindepth 1 \( -name __pycache__ -o -name ".*" \) -prune -o -type f -print) | while read -r f; do
        install -D -m 0644 "$kernels/$f" "$out/kernels/$f"
done
# Byte-compiled with the build host's python3: the runtime is read-only in a sandbox, so a
# kernel could not cache its own compilation; an image with another Python version compiles
# in memory as before.
if command -v python3 >/dev/null 2>&1; then
        python3 -m compileall -q "$out/kernels/python" >/dev/null
fi
[ -z "$stamp" ] || touch "$stamp"
