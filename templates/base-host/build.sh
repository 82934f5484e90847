#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# templates/base-host/build.sh DEST: build the "base-host" template into DEST (see templates/README.md).
set -eu
[ $# -eq 1 ] || { echo "usage: build.sh DEST" >&2; exit 1; }
exec "$(cd "$(dirname "$0")/.." && pwd)/build.sh" base-host "$1"
