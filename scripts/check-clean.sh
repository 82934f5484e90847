#!/usr/bin/env bash
# After the suites: nothing a sandbox used may remain on the host. Prints what it finds.
#  - sandbox dirs under the test state dir
#  - sandbox cgroups (sbx/<id>) in the v2 and every v1 hierarchy
#  - processes still in a sandbox cgroup, and zombie agents nobody reaped
#  - mounts under the state dir in the host mount namespace
#  - loop devices still backed by a sandbox's disk image or a volume's image (any state dir)
#  - egress links (sbxe<slot>) and every sbxd's nftables tables (inet sbx_<instance> and
#    inet sbxk_<instance>), which go with its last sandbox that had a link
#    (server/egress/nft-rules.h); and uid slot claims of state dirs that are gone (/run/sbx)
set -u
state=${1:-$(cat /tmp/sbx-last-test-state 2>/dev/null)}
bad=0
if [ -n "$state" ] && [ -d "$state/sandboxes" ] && [ -n "$(ls -A "$state/sandboxes")" ]; then
        echo "leftover sandbox dirs: $(ls "$state/sandboxes")"; bad=1
fi
for h in /sys/fs/cgroup/*/sbx /sys/fs/cgroup/unified/sbx; do
        [ -d "$h" ] || continue
        kids=$(find "$h" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)
        if [ -n "$kids" ]; then echo "leftover cgroups: $kids"; bad=1; fi
done
procs=$(grep -l ':/sbx/' /proc/[0-9]*/cgroup 2>/dev/null | cut -d/ -f3 | sort -u)
if [ -n "$procs" ]; then
        echo "leftover sandbox processes:"; ps -o pid,stat,comm -p $(echo $procs | tr ' ' ,); bad=1
fi
zombies=$(ps -eo stat=,comm= | awk '$1 ~ /^Z/ && $2 ~ /sbx-(agent|jailer)/' | wc -l)
if [ "$zombies" -gt 0 ]; then echo "unreaped sbx zombies: $zombies"; bad=1; fi
if [ -n "$state" ] && grep -q "$state" /proc/self/mountinfo; then
        echo "leftover mounts:"; grep "$state" /proc/self/mountinfo; bad=1
fi
loops=$(losetup -l -n -O NAME,BACK-FILE 2>/dev/null |
        grep -E '/(sandboxes/[a-z0-9]*|volumes/[0-9a-f-]{36})/disk.img')
if [ -n "$loops" ]; then echo "leftover loop devices:"; echo "$loops"; bad=1; fi
links=$(ip -br link 2>/dev/null | awk '$1 ~ /^sbxe[0-9]+(@|$)/ {sub(/@.*/, "", $1); print $1}')
if [ -n "$links" ]; then echo "leftover egress links: $links"; bad=1; fi
tables=$(nft list tables 2>/dev/null | awk '$3 ~ /^sbxk?_[0-9a-f]+$/ {print $3}')
if [ -n "$tables" ]; then echo "leftover nftables tables: $tables"; bad=1; fi
for c in /run/sbx/slots/*; do
        [ -f "$c" ] || continue
        owner=$(head -n 1 "$c")
        if [ -n "$state" ] && [ "$owner" = "$state" ]; then
                echo "leftover uid slot claim ${c##*/} of $state"; bad=1
        fi
done
[ "$bad" -eq 0 ] && echo "clean: no sandbox dirs, cgroups, processes, mounts, loop devices, egress links or rules left"
exit $bad
