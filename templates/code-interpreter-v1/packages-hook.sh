#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Hook of debian/layer.sh packages for code-interpreter-v1, run with ROOT the merged view:
# matplotlib's font list for the fonts of this layer, built once here and copied into
# ~/.cache/matplotlib by the python kernel (saves ~0.4 s per sandbox).
set -eu
R=$1
d=/opt/sbx/kernels/python/mpl-cache
mkdir -p "$R$d"
chroot "$R" env MPLCONFIGDIR=$d HOME=/tmp python3 -c 'import matplotlib.font_manager'
find "$R$d" -type f ! -name 'fontlist-*.json' -delete
chmod -R a+rX "$R/opt/sbx"
