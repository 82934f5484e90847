#!/usr/bin/env bash
# Run every suite and end with one line "N passed, N failed".
#   unit      meson unit tests (one binary per module)
#   asan      the unit tests again, built with ASan+UBSan
#   format    clang-format check of every C file
#   layers    every #include points the way scripts/layers.conf allows (scripts/check-layers.py)
#   docs      what docs/ and the READMEs name exists: files, functions, the jailer's step
#             numbers; each folder's README names its C files (scripts/check-docs.py)
#   clang     everything built with clang and -Werror (build dir <build>-clang)
#   cppcheck  static analysis of the C sources (scripts/cppcheck-suppressions.txt says what is
#             suppressed and why)
#   node      integration, compat (real npm SDKs), security, TypeScript client and console
#             (headless chromium) suites against a real sbxd
#   python    the Python client's suites (pytest) against a real sbxd
#   package   make deb, installed into a Debian root booted with systemd-nspawn, driven with
#             apt, systemctl and the SDK (tests/package/README.md)
#   cleanup   nothing this run left behind: no sandbox cgroups, processes, mounts or dirs
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${1:-build}
pass=0
fail=0
failed_suites=()
# what a run before this one left on the host (cgroups, loop devices...) is not this run's
hostbefore=$(mktemp /tmp/sbx-host-before.XXXXXX)
bash scripts/check-clean.sh --before "$hostbefore"

count() { # suite name, passed, failed
        pass=$((pass + $2))
        fail=$((fail + $3))
        echo "== $1: $2 passed, $3 failed"
        [ "$3" -eq 0 ] || failed_suites+=("$1")
}

check() { # suite name, log, command...: one check, passed or failed; the log's head on failure
        local name=$1 log=$2
        shift 2
        if "$@" >"$log" 2>&1; then
                count "$name" 1 0
        else
                head -n 20 "$log"
                count "$name" 0 1
        fi
}

tap_count() { # suite name, TAP log: its last "# pass"/"# fail" counted (none: the run broke)
        local p f
        p=$(grep -aE '^# pass ' "$2" | tail -n 1 | awk '{print $3}')
        f=$(grep -aE '^# fail ' "$2" | tail -n 1 | awk '{print $3}')
        if [ -z "$p" ]; then
                count "$1" 0 1
        else
                count "$1" "$p" "${f:-0}"
        fi
}

meson_counts() { # build dir → "passed failed" from testlog.json
        python3 - "$1/meson-logs/testlog.json" <<'PY'
import json, sys
ok = bad = 0
try:
    for line in open(sys.argv[1]):
        r = json.loads(line).get("result")
        if r in ("OK", "EXPECTEDFAIL"): ok += 1
        elif r != "SKIP": bad += 1
except FileNotFoundError:
    bad = 1
print(ok, bad)
PY
}

# ---- unit ----
echo "== unit"
meson test -C "$build" --suite unit --print-errorlogs >/tmp/sbx-unit.log 2>&1
read -r p f < <(meson_counts "$build")
tail -n 12 /tmp/sbx-unit.log | grep -E '^(Ok|Fail|Timeout)' || true
count unit "$p" "$f"

# ---- asan ----
echo "== asan (ASan+UBSan unit tests)"
asan="$build-asan"
if [ ! -f "$asan/build.ninja" ]; then
        # float-cast-overflow: gcc's -fsanitize=undefined leaves it out, and a double out of an
        # integer type's range (a JSON number like 1e300) is exactly what parsers must not convert.
        meson setup "$asan" -Db_sanitize=address,undefined -Db_lundef=false \
                -Dc_args=-fsanitize=float-cast-overflow -Dc_link_args=-fsanitize=float-cast-overflow \
                -Dbuildtype=debug >/tmp/sbx-asan-setup.log 2>&1 || cat /tmp/sbx-asan-setup.log
fi
if ninja -C "$asan" >/tmp/sbx-asan-build.log 2>&1; then
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
                meson test -C "$asan" --suite unit --print-errorlogs >/tmp/sbx-asan.log 2>&1
        read -r p f < <(meson_counts "$asan")
        count asan "$p" "$f"
else
        tail -n 30 /tmp/sbx-asan-build.log
        count asan 0 1
fi

# ---- format ----
echo "== format"
check format /tmp/sbx-format.log clang-format --dry-run --Werror $(git ls-files '*.c' '*.h')

# ---- layers: no include points the wrong way between a component's folders ----
echo "== layers"
check layers /tmp/sbx-layers.log python3 scripts/check-layers.py

# ---- docs: what the documents name exists ----
echo "== docs"
check docs /tmp/sbx-docs.log python3 scripts/check-docs.py

# ---- clang: the whole tree with a second compiler, warnings as errors ----
echo "== clang (clang -Werror build)"
started=$SECONDS
clang_build="$build-clang"
if [ ! -f "$clang_build/build.ninja" ]; then
        CC=clang meson setup "$clang_build" -Dwerror=true >/tmp/sbx-clang-setup.log 2>&1 ||
                cat /tmp/sbx-clang-setup.log
fi
if ninja -C "$clang_build" >/tmp/sbx-clang-build.log 2>&1; then
        count clang 1 0
else
        grep -E 'error|FAILED' /tmp/sbx-clang-build.log | head -n 20
        count clang 0 1
fi
echo "   clang took $((SECONDS - started)) s"

# ---- cppcheck: static analysis over the sources (tests excluded: their failures abort them,
# and ASan runs them). System headers are not ours: libcurl's pkg-config adds
# -I/usr/include/x86_64-linux-gnu, which makes cppcheck read glibc's headers as project ones
# (it then reports <sys/mount.h>'s 1<<31), so findings under /usr/include are left out ----
echo "== cppcheck"
started=$SECONDS
if cppcheck --project="$build/compile_commands.json" --enable=warning,portability \
        --inline-suppr --error-exitcode=1 -q --suppress=missingIncludeSystem \
        --suppress='*:/usr/include/*' \
        --suppressions-list=scripts/cppcheck-suppressions.txt -i tests -j2 \
        >/tmp/sbx-cppcheck.log 2>&1; then
        count cppcheck 1 0
else
        grep -E '^[^ ]+:[0-9]+:[0-9]+: ' /tmp/sbx-cppcheck.log | head -n 20
        count cppcheck 0 1
fi
echo "   cppcheck took $((SECONDS - started)) s"

# ---- node suites against a real sbxd ----
echo "== node suites (integration, compat, security, console)"
(cd tests && npm ci --no-audit --no-fund --silent >/tmp/sbx-npm.log 2>&1) || {
        cat /tmp/sbx-npm.log
        count npm 0 1
}
# A log of this run's own (runs in parallel must not share one); -a: test output may hold
# binary bytes, which would turn grep's answer into "binary file matches".
nodelog=$(mktemp /tmp/sbx-node.XXXXXX.log)
noderecord=$(mktemp /tmp/sbx-node-state.XXXXXX)
SBX_KEEP_STATE=1 SBX_STATE_RECORD=$noderecord bash scripts/test-node.sh "$build" 2>&1 | tee "$nodelog"
nodestate=$(cat "$noderecord" 2>/dev/null)
rm -f "$noderecord"
tap_count node "$nodelog"

# ---- python: the Python client (tests/clients/python, Debian's pytest) against its own sbxd ----
echo "== python (the Python client against a real sbxd)"
pylog=$(mktemp /tmp/sbx-python.XXXXXX.log)
bash scripts/test-python.sh "$build" 2>&1 | tee "$pylog"
summary=$(grep -aE '^=* *[0-9]+ (passed|failed|errors?)' "$pylog" | tail -n 1)
pp=$(echo "$summary" | grep -oE '[0-9]+ passed' | head -n 1 | awk '{print $1}')
pf=$(echo "$summary" | grep -oE '[0-9]+ (failed|errors?)' | awk '{s += $1} END {print s + 0}')
if [ -z "$pp" ] && [ "${pf:-0}" -eq 0 ]; then
        count python 0 1
else
        count python "${pp:-0}" "$pf"
fi

# ---- package: the Debian package in a booted Debian root ----
echo "== package (tests/package/run.sh)"
pkglog=$(mktemp /tmp/sbx-package.XXXXXX.log)
bash tests/package/run.sh 2>&1 | tee "$pkglog"
tap_count package "$pkglog"

# ---- cleanup ----
echo "== cleanup"
if bash scripts/check-clean.sh "$nodestate" "$hostbefore"; then
        count cleanup 1 0
        # the node suites' state dir (gigabytes of templates): kept only when something failed
        if [ "$fail" -eq 0 ] && [ -n "$nodestate" ] && [ -d "$nodestate" ] &&
                ! grep -q " $nodestate" /proc/self/mountinfo; then
                rm -rf --one-file-system "$nodestate"
        fi
else
        count cleanup 0 1
fi

rm -f "$hostbefore"
[ ${#failed_suites[@]} -eq 0 ] || echo "failed suites: ${failed_suites[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
