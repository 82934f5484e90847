#!/usr/bin/env bash
# After the suites: nothing a sandbox used may remain on the host. Prints what it finds.
#  - sandbox dirs under the test state dir
#  - sandbox cgroups (sbx/<id>) in the v2 and every v1 hierarchy
#  - processes still in a sandbox cgroup, and zombie agents nobody reaped
#  - mounts under the state dir in the host mount namespace
#  - loop devices still backed by a sandbox's disk image or a volume's image (any state dir), or
#    by the test state dir's storage pool image
#  - egress links (sbxe<slot>) and every sbxd's nftables tables (inet sbx_<instance> and
#    inet sbxk_<instance>), which go with its last sandbox that had a link
#    (server/egress/nft-rules.h); and uid slot claims of the state dir (/run/sbx)
#  - state dirs of the integration tests' own sbxd (/tmp/sbxd-it-*), which their stop() removes
# Host-wide things (cgroups, loop devices, links, nft tables) that were already there when
# the run began are not this run's: `check-clean.sh --before FILE` records them at the start,
# `check-clean.sh STATE FILE` at the end names them apart and fails only on new ones.
set -u

hostwide() { # one line per host-wide leftover, any state dir
        for h in /sys/fs/cgroup/*/sbx; do # v1 controllers and the v2 unified hierarchy
                [ -d "$h" ] && find "$h" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sed 's/^/cgroup /'
        done
        losetup -l -n -O NAME,BACK-FILE 2>/dev/null |
                grep -E '/(sandboxes/[a-z0-9]*|volumes/[0-9a-f-]{36})/disk.img' | sed 's/^/loop /'
        ip -br link 2>/dev/null | awk '$1 ~ /^sbxe[0-9]+(@|$)/ {sub(/@.*/, "", $1); print "link " $1}'
        if command -v nft >/dev/null; then
                nft list tables 2>/dev/null | awk '$3 ~ /^sbxk?_[0-9a-f]+$/ {print "nft table inet " $3}'
        fi
        for d in "${TMPDIR:-/tmp}"/sbxd-it-*; do # a test's own sbxd state (tests/integration/sbxd.mjs)
                [ -d "$d" ] && echo "test state dir $d"
        done
}

if [ "${1:-}" = --before ]; then
        hostwide | sort >"$2"
        exit 0
fi
state=${1:-$(cat /tmp/sbx-last-test-state 2>/dev/null)}
before=${2:-/dev/null}
bad=0
if [ -n "$state" ] && [ -d "$state/sandboxes" ] && [ -n "$(ls -A "$state/sandboxes")" ]; then
        echo "leftover sandbox dirs: $(ls "$state/sandboxes")"; bad=1
fi
now=$(hostwide | sort)
new=$(comm -23 <(echo "$now" | sed '/^$/d') "$before")
old=$(comm -12 <(echo "$now" | sed '/^$/d') "$before")
if [ -n "$old" ]; then
        echo "already on the host before this run (not counted): $(echo "$old" | wc -l) items"
fi
if [ -n "$new" ]; then echo "leftover from this run:"; echo "$new"; bad=1; fi
# processes in a sandbox cgroup that was not already there
oldids=$(echo "$old" | awk '$1 == "cgroup" {n = split($2, p, "/"); print p[n]}' | sort -u)
procs=$(for f in /proc/[0-9]*/cgroup; do
        id=$(grep -o ':/sbx/[a-z0-9]*' "$f" 2>/dev/null | head -n 1 | cut -d/ -f3)
        [ -n "$id" ] && ! grep -qx "$id" <<<"$oldids" && echo "$f" | cut -d/ -f3
done | sort -u)
if [ -n "$procs" ]; then
        echo "leftover sandbox processes:"; ps -o pid,stat,comm -p $(echo $procs | tr ' ' ,); bad=1
fi
zombies=$(ps -eo stat=,comm= | awk '$1 ~ /^Z/ && $2 ~ /sbx-(agent|jailer)/' | wc -l)
if [ "$zombies" -gt 0 ]; then echo "unreaped sbx zombies: $zombies"; bad=1; fi
if [ -n "$state" ] && grep -q "$state" /proc/self/mountinfo; then
        echo "leftover mounts:"; grep "$state" /proc/self/mountinfo; bad=1
fi
if [ -n "$state" ]; then # the storage pool goes with the last sandbox of its state dir
        pool=$(losetup -l -n -O NAME,BACK-FILE 2>/dev/null | grep -F "$state/pool.img")
        if [ -n "$pool" ]; then echo "leftover storage pool loop device: $pool"; bad=1; fi
fi
for c in /run/sbx/slots/*; do # a slot claim goes with its sandbox (server/core/host-claim.h)
        [ -f "$c" ] || continue
        if [ -n "$state" ] && [ "$(head -n 1 "$c")" = "$state" ]; then
                echo "leftover uid slot claim ${c##*/} of $state"; bad=1
        fi
done
[ "$bad" -eq 0 ] && echo "clean: no sandbox dirs, cgroups, processes, mounts, loop devices, egress links or rules left"
exit $bad
