#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Figures for issue 14 (templates you build), printed, never asserted:
#   1. the Debian base build: cold (a private, empty cache dir) and cached (build-all.sh into
#      a fresh state dir, the cache warm);
#   2. importing a ~100 MB image (tests/integration/fixtures/mkimage.py --filler-mb 96) over
#      POST /v1/images, then again (every layer already stored);
#   3. create p50 (no warm pool) of the imported template beside base, N creates each.
# bench/image-bench.sh [BUILD] [N]   (SKIP_COLD=1 leaves out the cold build: minutes)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$top/${1:-build}" && pwd)
n=${2:-10}
work=$(mktemp -d /tmp/sbx-image-bench.XXXXXX)
trap 'kill -TERM "$sbxd_pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
sbxd_pid=
. "$top/bench/bench-lib.sh"

if [ "${SKIP_COLD:-0}" != 1 ]; then
        t0=$(date +%s.%N)
        SBX_CACHE_DIR=$work/cache bash "$top/templates/build-all.sh" "$work/cold/templates" 2>/dev/null
        echo "base build, cold (empty cache):   $(echo "$(date +%s.%N) - $t0" | bc) s"
        rm -rf "$work/cache" "$work/cold"
fi
bash "$top/templates/build-all.sh" "$work/warm0/templates" 2>/dev/null # warms the default cache
t0=$(date +%s.%N)
bash "$top/templates/build-all.sh" "$work/state/templates" 2>/dev/null
echo "base build, cached (fresh state): $(echo "$(date +%s.%N) - $t0" | bc) s"

start_sbxd

python3 "$top/tests/integration/fixtures/mkimage.py" "$work/img.tar" --filler-mb 96
size=$(stat -c %s "$work/img.tar")
for pass in first again; do
        t=$(curl -s -o /dev/null -w '%{time_total}' -X POST -H "Authorization: Bearer $key" \
                --data-binary @"$work/img.tar" "$url/v1/images?name=bench-img")
        echo "import of a $((size >> 20)) MiB OCI archive ($pass): $t s"
done

for tpl in base bench-img; do
        create_p50 "$tpl" "$n"
done
