#!/usr/bin/env bash
# Start a real sbxd on a free port with a fresh state dir, run the node suites (or
# $SBX_TEST_COMMAND) against it with the E2B variables exported, then remove whatever the tests
# left (and say so: that is a failure). The state dir (its templates hold gigabytes) is removed
# after a run that passed, and kept, named on the last line, after one that failed;
# SBX_KEEP_STATE=1 keeps it either way (make test's cleanup check reads it, then removes it).
# Its path is written to $SBX_STATE_RECORD (default /tmp/sbx-last-test-state).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$top/${1:-build}" && pwd)
cd "$top"

state=$(mktemp -d /tmp/sbx-test-state.XXXXXX)
export SBXD="$build/server/sbxd" SBX_JAILER="$build/jailer/sbx-jailer" \
       SBX_AGENT="$build/guest-agent/sbx-agent" SBX_TEMPLATE_BUILD="$top/templates/build-all.sh"
export SBX_TEST_STATE="$state"

bash templates/build-all.sh "$state/templates" || { echo "template build failed"; exit 1; }

# SBXD_ARGS: extra sbxd options for a run (e.g. --disk tmpfs)
# SBX_TEST_POOL: the storage pool's size (server/storage/disk-pool.h); small, it is preallocated
"$SBXD" --listen 127.0.0.1:0 --state-dir "$state" --port-file "$state/port" \
        --storage-pool "${SBX_TEST_POOL:-4G}" ${SBXD_ARGS:-} \
        >"$state/sbxd.out" 2>"$state/sbxd.log" &
sbxd_pid=$!
for _ in $(seq 100); do [ -s "$state/port" ] && break; sleep 0.05; done
if [ ! -s "$state/port" ]; then
        echo "sbxd did not start:"; cat "$state/sbxd.log"; exit 1
fi
port=$(cat "$state/port")
export E2B_API_URL="http://127.0.0.1:$port" E2B_SANDBOX_URL="http://127.0.0.1:$port"
export E2B_VOLUME_API_URL="http://127.0.0.1:$port"
export E2B_API_KEY=$(head -n 1 "$state/keys")
export SBX_TEST_BUILD="$build"

files=${SBX_TEST_FILES:-$(ls tests/integration/*.test.mjs tests/compat/*.test.mjs tests/security/*.test.mjs tests/clients/*.test.mjs tests/console/*.test.mjs 2>/dev/null)}
# SBX_TEST_COMMAND: another runner against the same sbxd (scripts/test-python.sh)
if [ -n "${SBX_TEST_COMMAND:-}" ]; then
        bash -c "$SBX_TEST_COMMAND"
else
        node --test --test-reporter=tap --test-concurrency=1 $files
fi
rc=$?

# Anything still listed was leaked by a test: report, then kill it so the machine is clean.
left=$(curl -s -H "X-API-KEY: $E2B_API_KEY" "$E2B_API_URL/v2/sandboxes" | python3 -c \
        'import json,sys; print(" ".join(s["sandboxID"] for s in json.load(sys.stdin)))' 2>/dev/null)
for id in $left; do
        echo "leftover sandbox $id (a test did not kill it)"
        curl -s -o /dev/null -X DELETE -H "X-API-KEY: $E2B_API_KEY" "$E2B_API_URL/sandboxes/$id"
done
kill -TERM "$sbxd_pid" 2>/dev/null
wait "$sbxd_pid" 2>/dev/null
# sbxd unmounts its storage pool when no sandbox dir is left: a pool still mounted is a leak
if grep -q " $state/pool " /proc/self/mountinfo; then
        echo "storage pool still mounted after sbxd stopped (sandbox dirs left: $(ls "$state/sandboxes"))"
        umount -l "$state/pool"; rc=1
fi
rm -f "$state/pool.img" # preallocated: not left behind in /tmp after every run
if grep -q '"level":"error"' "$state/sbxd.log"; then
        echo "sbxd logged errors:"; grep '"level":"error"' "$state/sbxd.log" | tail -n 20
fi
echo "$state" >"${SBX_STATE_RECORD:-/tmp/sbx-last-test-state}"
if [ "${SBX_KEEP_STATE:-0}" = 1 ]; then
        :
elif [ "$rc" -eq 0 ] && ! grep -q " $state" /proc/self/mountinfo; then
        rm -rf --one-file-system "$state"
else
        echo "state dir kept for a look: $state"
fi
exit $rc
