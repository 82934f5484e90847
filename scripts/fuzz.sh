#!/usr/bin/env bash
# Build the libFuzzer harnesses of tests/fuzz/ with clang in their own build dir (libraries
# instrumented for coverage, ASan+UBSan) and run each for FUZZ_SECONDS (default 60).
#   scripts/fuzz.sh            run every harness (FUZZ_TARGETS="frame route" for some)
#   scripts/fuzz.sh --merge    add what the runs found to tests/fuzz/corpus/<name>/, keeping
#                              only inputs that reach new coverage (libFuzzer -merge=1)
# New inputs go to <build>/fuzz-corpus/<name>/ (never straight into the committed corpus);
# crashers to tests/fuzz/crashers/<name>/ (not tracked: once the bug is fixed, move the file
# into tests/fuzz/corpus/<name>/ under a name saying what it was, so it is replayed forever).
# Ends with one line per harness (execs, corpus, crashes) and exits 1 when any crashed.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
build=${FUZZ_BUILD:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
# Every tests/fuzz/fuzz-<name>.c but the replay driver is a harness.
all=$(for f in tests/fuzz/fuzz-*.c; do n=${f#tests/fuzz/fuzz-}; echo "${n%.c}"; done | grep -vx replay)
targets=${FUZZ_TARGETS:-$all}
merge=0
[ "${1:-}" = "--merge" ] && merge=1

if [ ! -f "$build/build.ninja" ]; then
        CC=clang meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false \
                -Dc_args=-fsanitize=fuzzer-no-link -Dc_link_args=-fsanitize=fuzzer-no-link \
                >"$build.setup.log" 2>&1 || { cat "$build.setup.log"; exit 1; }
        rm -f "$build.setup.log"
fi
ninja -C "$build" $(for t in $targets; do echo "tests/fuzz/fuzz-$t"; done) >/dev/null || exit 1

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
crashed=0
for t in $targets; do
        bin="$build/tests/fuzz/fuzz-$t"
        seeds="tests/fuzz/corpus/$t"
        work="$build/fuzz-corpus/$t"
        mkdir -p "$work"
        if [ "$merge" = 1 ]; then
                "$bin" -merge=1 "$seeds" "$work" >"$build/fuzz-$t-merge.log" 2>&1 ||
                        { tail -n 20 "$build/fuzz-$t-merge.log"; exit 1; }
                echo "fuzz $t: corpus $(ls "$seeds" | wc -l) files, $(du -sk "$seeds" | cut -f1) KiB"
                continue
        fi
        crashers="tests/fuzz/crashers/$t"
        mkdir -p "$crashers"
        before=$(ls "$crashers" | wc -l)
        log="$build/fuzz-$t.log"
        dict=()
        [ -f "tests/fuzz/$t.dict" ] && dict=(-dict="tests/fuzz/$t.dict")
        "$bin" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$crashers/" \
                "${dict[@]}" "$work" "$seeds" >"$log" 2>&1
        rc=$?
        execs=$(grep -aE '^stat::number_of_executed_units' "$log" | awk '{print $2}')
        corpus=$(find "$work" "$seeds" -type f | wc -l)
        new=$(($(ls "$crashers" | wc -l) - before))
        echo "fuzz $t: ${execs:-?} execs in ${seconds}s, corpus $corpus, new crashers $new (log: $log)"
        if [ "$rc" -ne 0 ] || [ "$new" -gt 0 ]; then
                grep -aE 'ERROR|SUMMARY|property broken|runtime error' "$log" | head -n 5
                crashed=1
        fi
done
[ "$crashed" = 0 ] || echo "crashers are in tests/fuzz/crashers/: fix the parser, then move each into tests/fuzz/corpus/<name>/"
exit "$crashed"
