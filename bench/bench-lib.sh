# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by the shell benches (image-bench.sh, image-pull.sh): an sbxd of their own and the
# create figure they share. Expects $build (a build dir) and $work (the bench's temp dir).

# sbxd on $work/state (templates built there already), no warm pool, port 0: sets sbxd_pid,
# url and key.
start_sbxd() {
        "$build/server/sbxd" --listen 127.0.0.1:0 --state-dir "$work/state" \
                --port-file "$work/port" --pool-size 0 >/dev/null 2>"$work/sbxd.log" &
        sbxd_pid=$!
        for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
        url=http://127.0.0.1:$(cat "$work/port")
        key=$(head -n 1 "$work/state/keys")
}

# TEMPLATE N: N cold creates (E2B's POST /sandboxes) one after another, each killed; prints
# their p50, or why the template was not measured (a create that fails).
create_p50() {
        local tpl=$1 n=$2 times=$work/times out code rest id
        : >"$times"
        for _ in $(seq "$n"); do
                out=$(curl -s -w ' %{time_total} %{http_code}' -X POST -H "X-API-KEY: $key" \
                        -H 'Content-Type: application/json' -d "{\"templateID\":\"$tpl\"}" \
                        "$url/sandboxes")
                code=${out##* }
                rest=${out% *}
                if [ "$code" != 201 ]; then
                        echo "create of $tpl: not measured, it fails: ${rest% *}"
                        return 0
                fi
                id=$(echo "${rest% *}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["sandboxID"])')
                echo "${rest##* }" >>"$times"
                curl -s -o /dev/null -X DELETE -H "X-API-KEY: $key" "$url/sandboxes/$id"
        done
        sort -n "$times" | awk -v t="$tpl" -v n="$n" '{a[NR] = $1}
                END {printf "create p50, %s (%d cold creates): %.0f ms\n", t, n, a[int((NR + 1) / 2)] * 1000}'
}
