#!/bin/sh
# Builds the libFuzzer targets with clang, ASan and UBSan (-Dfuzzing=true,
# coverage in the runtime too) and runs each for a bounded time on a scratch
# copy of its seed corpus (the committed seeds plus a fresh set from the
# real encoder). Any crash, leak, sanitizer report or failed property stops
# the run; the reproducer is kept in the work directory.
#   tests/fuzz/run-fuzzers.sh [SECONDS_EACH (60)] [BUILD_DIR (build-fuzz)]
# Prints one line per target and "FOXJIT-COUNT fuzz_execs_<target> N" for
# the closing note of tools/run-tests.sh. Exit status 1 on any finding.
set -eu
cd "$(dirname "$0")/../.."
secs=${1:-60}
B=${2:-build-fuzz}
cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$B/build.ninja" ]; then
    CC=clang meson setup "$B" -Dtoolkit="$cuda" -Dfuzzing=true -Dtests=false -Dtools=false \
        -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null
fi
# Only the fuzz targets: libfoxjit.so does not link with clang's static
# sanitizer runtimes (-Wl,--no-undefined), and is not needed here.
if ! ninja -C "$B" tests/fuzz/fuzz_cache_entry tests/fuzz/fuzz_manifest \
        tests/fuzz/make_entry_seeds > "$B/ninja.log" 2>&1; then
    tail -n 30 "$B/ninja.log"
    for target in cache_entry manifest; do
        echo "fuzz_$target: not built (ninja -C $B failed; log: $B/ninja.log)"
    done
    exit 1
fi
work=$(mktemp -d /tmp/foxjit-fuzz.XXXXXX)
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
status=0
for target in cache_entry manifest; do
    corpus="$work/$target"
    mkdir -p "$corpus"
    cp tests/fuzz/corpus/$target/* "$corpus/"
    [ "$target" = cache_entry ] && "$B/tests/fuzz/make_entry_seeds" "$corpus"
    log="$work/$target.log"
    if "$B/tests/fuzz/fuzz_$target" -max_total_time="$secs" -detect_leaks=1 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/$target-" \
        "$corpus" >"$log" 2>&1; then
        result=clean
    else
        result="FAILED (log and reproducer in $work)"
        status=1
        tail -40 "$log" >&2
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    units=$(ls "$corpus" | wc -l)
    echo "fuzz_$target: ${execs:-0} executions in ${secs} s, $cov edges, corpus $units inputs: $result"
    echo "FOXJIT-COUNT fuzz_execs_$target ${execs:-0}"
done
[ $status -eq 0 ] && rm -rf "$work"
exit $status
