#!/usr/bin/env bash
# After the suites: nothing a sandbox used may remain on the host. Prints what it finds.
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
procs=$(pgrep -a -f 'sbx-agent|sbx-jailer' | grep -v pgrep || true)
if [ -n "$procs" ]; then echo "leftover processes: $procs"; bad=1; fi
if [ -n "$state" ] && grep -q "$state" /proc/self/mountinfo; then
        echo "leftover mounts:"; grep "$state" /proc/self/mountinfo; bad=1
fi
[ "$bad" -eq 0 ] && echo "clean: no sandbox dirs, cgroups, processes or mounts left"
exit $bad
