#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build the default templates into DEST/<name> (default /var/lib/sbx/templates). Idempotent.
#
#   base, code-interpreter-v1   Debian root file systems (templates/debian/), cached in
#                               $SBX_CACHE_DIR (default /var/cache/sbx): minutes the first time
#                               on a machine, about a second afterwards
#   base-host                   the host's /usr bound read-only plus a small layer (no mirror
#                               needed)
#
# When no Debian mirror of the host's apt sources answers, base and code-interpreter-v1 are
# built from their -host variants instead (said on stderr, and in DEST/.fallback), so that a
# machine without a mirror still runs every SDK default. SBX_BASE=host asks for that fallback.
#
# While it runs it holds an flock on DEST/.building: sbxd then answers a create of a template
# not built yet with 503 "being built", and GET /health says "templates":"building"
# (server/storage/template.h). A second build-all.sh waits for the first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:-/var/lib/sbx/templates}
mkdir -p "$dest"
exec 8>"$dest/.building"
flock 8
started=$SECONDS

bash "$here/base-host/build.sh" "$dest/base-host"

fallback=
if [ "${SBX_BASE:-debian}" = host ]; then
        fallback="SBX_BASE=host"
fi
for t in base code-interpreter-v1; do
        if [ -z "$fallback" ]; then
                rc=0
                bash "$here/$t/build.sh" "$dest/$t" || rc=$?
                if [ $rc -eq 0 ]; then
                        continue
                elif [ $rc -ne 3 ]; then
                        echo "templates: building $t failed" >&2
                        exit $rc
                fi
                fallback="no Debian mirror of this host's apt sources answered"
                echo "templates: $fallback: base and code-interpreter-v1 are the host-/usr" \
                        "templates (base-host, code-interpreter-v1-host) instead" >&2
        fi
        bash "$here/$t-host/build.sh" "$dest/$t"
done
if [ -n "$fallback" ]; then
        echo "$fallback" >"$dest/.fallback"
else
        rm -f "$dest/.fallback"
fi
if [ $((SECONDS - started)) -ge 5 ]; then
        echo "templates: built in $((SECONDS - started)) s" >&2
fi
