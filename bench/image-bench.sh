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

"$build/server/sbxd" --listen 127.0.0.1:0 --state-dir "$work/state" --port-file "$work/port" \
        --pool-size 0 >/dev/null 2>"$work/sbxd.log" &
sbxd_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
url=http://127.0.0.1:$(cat "$work/port")
key=$(head -n 1 "$work/state/keys")

python3 "$top/tests/integration/fixtures/mkimage.py" "$work/img.tar" --filler-mb 96 \
        --agent "$build/guest-agent/sbx-agent"
size=$(stat -c %s "$work/img.tar")
for pass in first again; do
        t=$(curl -s -o /dev/null -w '%{time_total}' -X POST -H "Authorization: Bearer $key" \
                --data-binary @"$work/img.tar" "$url/v1/images?name=bench-img")
        echo "import of a $((size >> 20)) MiB OCI archive ($pass): $t s"
done

p50() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for tpl in base bench-img; do
        for _ in $(seq "$n"); do
                out=$(curl -s -w ' %{time_total}' -X POST -H "X-API-KEY: $key" \
                        -H 'Content-Type: application/json' -d "{\"templateID\":\"$tpl\"}" \
                        "$url/sandboxes")
                id=$(echo "$out" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().rsplit(" ",1)[0])["sandboxID"])')
                echo "${out##* }"
                curl -s -o /dev/null -X DELETE -H "X-API-KEY: $key" "$url/sandboxes/$id"
        done | p50 | awk -v t="$tpl" -v n="$n" '{printf "create p50, %s (%d cold creates): %.0f ms\n", t, n, $1 * 1000}'
done
