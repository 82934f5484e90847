#!/usr/bin/env bash
# Install the Debian packages sbx needs, and only those that are missing. Idempotent and quiet
# when everything is already there. Needs root (apt-get) the first time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

want=$(cat "$here"/deps-base.txt $(ls "$here"/deps.txt 2>/dev/null) | sed "s/#.*//" | awk 'NF {print $1}' | sort -u)
missing=()
for p in $want; do
        status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
        if [ "$status" != "install ok installed" ]; then
                missing+=("$p")
        fi
done
# Node.js is normally present on these machines; install Debian's only when node is absent.
if ! command -v node >/dev/null 2>&1; then
        missing+=(nodejs npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
        echo "install-deps: installing ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
exit 0
