#!/usr/bin/env bash
# The Python client's suites (tests/clients/python, pytest) against a real sbxd started by
# scripts/test-node.sh. Debian's python3 on purpose: the client is written for the
# python3-httpx and python3-websockets that bookworm packages. Extra arguments go to pytest.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
shift || true
cd "$top"
export SBX_TEST_COMMAND="/usr/bin/python3 -m pytest -p no:cacheprovider -q -rf tests/clients/python$(printf " %q" "$@")"
exec bash scripts/test-node.sh "$build"
