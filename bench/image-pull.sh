#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Registry pulls (server/pull/README.md), printed, never asserted. Starts its own registry
# (Debian's docker-registry on loopback) and sbxd (fresh state, no warm pool):
#   1. pull of Debian minbase with python3 (tests/lib/images/build.sh: about 65 MB of gzip,
#      200 MB unpacked) through POST /v1/images/pull, MB/s of the compressed bytes, beside
#      `skopeo copy` of the same image from the registry to a local directory (the transfer
#      and digest checks alone) and to an OCI layout, and `tar -xzf` of its layer (unpacking
#      alone: a pull also unpacks every layer and names it by the store's walk);
#   2. the same pull again (every layer stored already: the manifest and config only);
#   3. the app image on the same base (one small layer of its own);
#   4. create p50 (N cold creates, E2B's POST /sandboxes) of the pulled app image beside base.
# bench/image-pull.sh [BUILD] [N]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$top/${1:-build}" && pwd)
n=${2:-10}
work=$(mktemp -d /tmp/sbx-pull-bench.XXXXXX)
sbxd_pid= reg_pid=
trap 'for p in $sbxd_pid $reg_pid; do kill -TERM "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"' EXIT
. "$top/bench/bench-lib.sh"

echo "load: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
bash "$top/tests/lib/images/build.sh" "$work/images"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$work/registry.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: 127.0.0.1:$port
EOF
docker-registry serve "$work/registry.yml" >/dev/null 2>&1 &
reg_pid=$!
reg=127.0.0.1:$port
for _ in $(seq 100); do curl -sf "http://$reg/v2/" >/dev/null && break; sleep 0.05; done
for i in minbase minbase-app; do
        skopeo copy -q --dest-tls-verify=false "oci:$work/images/$i:latest" "docker://$reg/bench/$i:v1"
done
size=$(curl -s -H 'Accept: application/vnd.oci.image.manifest.v1+json' \
        "http://$reg/v2/bench/minbase/manifests/v1" |
        python3 -c 'import json,sys; print(sum(l["size"] for l in json.load(sys.stdin)["layers"]))')
echo "image: $reg/bench/minbase:v1, $((size / 1000000)) MB of layers (gzip)"

mbps() { python3 -c "import sys; print('%.0f MB/s' % ($size / 1e6 / float(sys.argv[1])))" "$1"; }
t0=$(date +%s.%N)
skopeo copy -q --src-tls-verify=false "docker://$reg/bench/minbase:v1" "dir:$work/skopeo-dir"
t=$(echo "$(date +%s.%N) - $t0" | bc)
echo "skopeo copy to a directory:       $(printf '%.2f' "$t") s ($(mbps "$t"))"
t0=$(date +%s.%N)
skopeo copy -q --src-tls-verify=false "docker://$reg/bench/minbase:v1" "oci:$work/skopeo-oci:v1"
t=$(echo "$(date +%s.%N) - $t0" | bc)
echo "skopeo copy to an OCI layout:     $(printf '%.2f' "$t") s ($(mbps "$t"))"

blob=$(ls -S "$work/skopeo-dir" | head -n 1)
mkdir "$work/untar"
t0=$(date +%s.%N)
tar -xzf "$work/skopeo-dir/$blob" -C "$work/untar"
t=$(echo "$(date +%s.%N) - $t0" | bc)
echo "tar -xzf of its layer (unpacking alone): $(printf '%.2f' "$t") s"
rm -rf "$work/untar" "$work/skopeo-dir" "$work/skopeo-oci"

bash "$top/templates/build-all.sh" "$work/state/templates" 2>/dev/null
start_sbxd

pull() { # IMAGE → seconds (and the answer in $work/pull.json)
        curl -s -o "$work/pull.json" -w '%{time_total}' -X POST -H "Authorization: Bearer $key" \
                -H 'Content-Type: application/json' -d "{\"image\":\"$1\"}" "$url/v1/images/pull"
}
reused() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%d of %d layers already stored" % (sum(l["reused"] for l in j["layers"]), len(j["layers"])))' "$work/pull.json"; }
t=$(pull "$reg/bench/minbase:v1")
echo "sbxd pull, first:                 $(printf '%.2f' "$t") s ($(mbps "$t")); $(reused)"
t=$(pull "$reg/bench/minbase:v1")
echo "sbxd pull, the same again:        $(printf '%.2f' "$t") s; $(reused)"
t=$(pull "$reg/bench/minbase-app:v1")
echo "sbxd pull, the app on that base:  $(printf '%.2f' "$t") s; $(reused)"
app=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["template"])' "$work/pull.json")

for tpl in base "$app"; do
        create_p50 "$tpl" "$n"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
