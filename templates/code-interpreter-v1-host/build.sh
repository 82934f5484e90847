#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# templates/code-interpreter-v1-host/build.sh DEST: build "code-interpreter-v1-host" into DEST (templates/README.md).
set -eu
[ $# -eq 1 ] || { echo "usage: build.sh DEST" >&2; exit 1; }
exec "$(cd "$(dirname "$0")/.." && pwd)/build.sh" code-interpreter-v1-host "$1"
