#!/usr/bin/env bash
# Build every template into DEST/<name> (default /var/lib/sbx/templates). Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-/var/lib/sbx/templates}
mkdir -p "$dest"
for t in "$here"/*/build.sh; do
        name=$(basename "$(dirname "$t")")
        bash "$t" "$dest/$name"
done
