#!/bin/bash
# Set-up command 2: install what is missing, build, and run the tests.
#
#   tools/run-tests.sh            everything (below); about 10 minutes on 2 cores
#   tools/run-tests.sh --quick    the edit-compile-test loop: unit, compile for
#                                 sm_90 only, fault (fewer kills); about 2 minutes
#   tools/run-tests.sh ARGS...    meson test ARGS (e.g. --suite unit); the
#                                 reliability checks only with FOXJIT_EXTRA_CHECKS=1
#
# Everything is the suites (unit, compile, fault, scripts, bindings, gpu:
# skipped without a GPU, a failure with FOXJIT_REQUIRE_GPU=1) and the
# reliability checks of docs/reliability.md:
#   - an ASan+UBSan build (build-asan) running the unit and compile suites
#     (the compile suite for sm_90: its host code is the same for each arch);
#   - a ThreadSanitizer build (build-tsan) running the trainer's threaded
#     host tests (train_model_host, _multi_host, _dist_host, _ring_host);
#   - valgrind memcheck over the unit suite of the normal build;
#   - the libFuzzer targets, built with clang in build-fuzz
#     (tests/fuzz/run-fuzzers.sh), for FOXJIT_FUZZ_SECONDS each, by default
#     what is left of the run's budget (FOXJIT_TEST_BUDGET, 600 s), from 15
#     to 60 s each.
# They run in two lanes side by side: the suites, valgrind and the fuzzers,
# and the two sanitizer builds; each stage's output goes to its log
# (build/meson-logs/stage-*.txt), printed whole when the stage fails. A
# check whose tool is missing is counted as skipped and says what to
# install; tools/install-deps.sh installs them all.
#
# The last line is always "N passed, M failed, K skipped", counting every
# test of every run above (each fuzz target counts as one test), after a
# note with the fault-tolerance counts the tests printed.
set -u
cd "$(dirname "$0")/.." || exit 1
quick=0
case "${1:-}" in
--quick) quick=1; shift ;;
-h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
esac
sh tools/install-deps.sh || exit 1
cuda="${CUDA_HOME:-/usr/local/cuda}"
t0=$(date +%s)
say() { local e=$(( $(date +%s) - t0 )); printf '[%2d:%02d] %s\n' $((e / 60)) $((e % 60)) "$*"; }
logs_dir=build/meson-logs

if [ ! -f build/build.ninja ]; then
    meson setup build -Dtoolkit="$cuda" || exit 1
fi
say "building ./build"
ninja -C build > build/ninja.log 2>&1 || { tail -n 60 build/ninja.log; say "the build failed"; exit 1; }
say "built: $(tail -n 1 build/ninja.log)"
mkdir -p "$logs_dir"
rm -f "$logs_dir"/fuzz.txt "$logs_dir"/stage-*.txt "$logs_dir"/testlog*.json

if [ $quick = 1 ]; then
    say "quick: unit, compile (sm_90), fault"
    rc=0
    FOXJIT_COMPILE_ARCHS=sm_90 FOXJIT_FAULT_KILLS=${FOXJIT_FAULT_KILLS:-40} \
        meson test -C build --print-errorlogs --suite unit --suite compile --suite fault "$@" ||
        rc=1
    say "quick run done"
    python3 tools/test-summary.py "$logs_dir/testlog.json"
    exit $rc
fi

extra=${FOXJIT_EXTRA_CHECKS:-}
[ -n "$extra" ] || { [ $# -eq 0 ] && extra=1 || extra=0; }
if [ "$extra" != 1 ]; then
    rc=0
    meson test -C build --print-errorlogs "$@" || rc=1
    python3 tools/test-summary.py "$logs_dir/testlog.json"
    exit $rc
fi

# ---- the full run: two lanes -------------------------------------------------------------
# Each stage: stage NAME COMMAND...; its output in stage-NAME.txt, its
# result in stage-NAME.rc; one line when it ends, the whole log if it failed.
stage() {
    local name=$1; shift
    local log="$logs_dir/stage-$name.txt" s0=$(date +%s) cpu
    # CPU seconds of the stage and everything it started (bash's time).
    cpu=$( { TIMEFORMAT='%3U %3S'
             time { "$@" > "$log" 2>&1; echo $? > "$logs_dir/stage-$name.rc"; }; } 2>&1 )
    local rc
    rc=$(cat "$logs_dir/stage-$name.rc")
    cpu=$(awk '{printf "%d", $1 + $2}' <<< "$cpu")
    local took="in $(( $(date +%s) - s0 )) s ($cpu s of CPU)"
    if [ "$rc" = 0 ]; then
        say "$name: ok $took$(summary_of "$log")"
    else
        say "$name: FAILED (status $rc) $took; its log ($log):"
        cat "$log"
    fi
    return "$rc"
}
summary_of() {   # ": N ok, M skipped" from a meson test log, if it is one
    local ok fail skip
    ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$1" | tail -n 1)
    [ -n "$ok" ] || return 0
    fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$1" | tail -n 1)
    skip=$(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$1" | tail -n 1)
    printf ': %s ok, %s failed, %s skipped' "$ok" "${fail:-0}" "${skip:-0}"
}
note() { echo "$1" >> "$logs_dir/notes.txt"; }    # name:passed|failed|skipped:why
rm -f "$logs_dir/notes.txt" build-asan/meson-logs/testlog.json build-tsan/meson-logs/testlog.json
# Sanitizers abort on the first report, so any finding fails its test.
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
probe() { echo 'int main(void){return 0;}' | cc "$@" -x c - -o /tmp/foxjit-probe.$$ 2>/dev/null; }

main_suites() {
    meson test -C build --print-errorlogs --num-processes 2
}
valgrind_unit() {
    # valgrind runs a program 20-50x slower (the trainer's threaded host
    # tests take a minute or two under it), hence the longer timeouts.
    meson test -C build --print-errorlogs --suite unit --timeout-multiplier 8 \
        --num-processes 2 \
        --wrapper 'valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --track-origins=yes --quiet'
}
asan() {
    [ -f build-asan/build.ninja ] ||
        meson setup build-asan -Dtoolkit="$cuda" -Db_sanitize=address,undefined \
            -Db_lundef=false > /dev/null || return 1
    ninja -C build-asan -j 2 > build-asan/ninja.log 2>&1 || {
        tail -n 40 build-asan/ninja.log
        note "asan-build:failed:the ASan+UBSan build failed (ninja -C build-asan)"
        return 1
    }
    echo "built build-asan: $(tail -n 1 build-asan/ninja.log)"
    FOXJIT_COMPILE_ARCHS=sm_90 meson test -C build-asan --print-errorlogs --num-processes 1 \
        --timeout-multiplier 3 --suite unit --suite compile
}
tsan_tests="train_model_host train_multi_host train_dist_host train_ring_host"
tsan() {
    [ -f build-tsan/build.ninja ] ||
        meson setup build-tsan -Dtoolkit="$cuda" -Db_sanitize=thread -Db_lundef=false \
            > /dev/null || return 1
    local targets="" t
    for t in $tsan_tests; do targets="$targets tests/unit_$t"; done
    # shellcheck disable=SC2086
    ninja -C build-tsan -j 2 $targets > build-tsan/ninja.log 2>&1 || {
        tail -n 40 build-tsan/ninja.log
        note "tsan-build:failed:the ThreadSanitizer build failed (ninja -C build-tsan)"
        return 1
    }
    # ThreadSanitizer runs them 5-10x slower, hence the longer timeouts.
    # shellcheck disable=SC2086
    TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
        meson test -C build-tsan --no-rebuild --print-errorlogs --suite unit --num-processes 1 \
            --timeout-multiplier 8 $tsan_tests
}
fuzz() {
    local secs=${FOXJIT_FUZZ_SECONDS:-}
    if [ -z "$secs" ]; then
        # What is left of the budget, for the two targets, from 15 to 60 s
        # each (about 30 s go to building them).
        local left=$(( ${FOXJIT_TEST_BUDGET:-600} - ($(date +%s) - t0) - 45 ))
        secs=$(( left / 2 ))
        [ $secs -gt 60 ] && secs=60
        [ $secs -lt 15 ] && secs=15
    fi
    echo "libFuzzer: $secs s per target"
    tests/fuzz/run-fuzzers.sh "$secs" build-fuzz > "$logs_dir/fuzz.txt" 2>&1
    local rc=$?
    grep -v '^FOXJIT-COUNT' "$logs_dir/fuzz.txt"
    return $rc
}

lane_suites() {
    stage suites main_suites
    if command -v valgrind > /dev/null 2>&1; then
        stage valgrind valgrind_unit
    else
        note "valgrind:skipped:valgrind is not installed (apt-get install valgrind)"
    fi
    lane_fuzz
}
lane_sanitizers() {
    if probe -fsanitize=address,undefined; then
        stage asan asan
    else
        note "asan:skipped:no sanitizer runtime (apt-get install gcc libasan8 libubsan1)"
    fi
    if probe -fsanitize=thread; then
        stage tsan tsan
    else
        note "tsan:skipped:no ThreadSanitizer runtime (apt-get install gcc libtsan2)"
    fi
}
lane_fuzz() {
    if command -v clang > /dev/null 2>&1 &&
       printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' |
           clang -fsanitize=fuzzer,address,undefined -x c - -o /tmp/foxjit-probe.$$ 2>/dev/null
    then
        stage fuzz fuzz
        local t
        for t in cache_entry manifest; do
            if grep -q "^fuzz_$t: .*: clean\$" "$logs_dir/fuzz.txt" 2>/dev/null; then
                note "fuzz_$t:passed:"
            else
                note "fuzz_$t:failed:see $logs_dir/fuzz.txt"
            fi
        done
    else
        note "fuzz:skipped:clang with libFuzzer is missing (apt-get install clang libclang-rt-14-dev)"
    fi
    rm -f /tmp/foxjit-probe.$$
}

say "two lanes: the suites, valgrind, the fuzzers; and ASan, TSan"
lane_suites & a=$!
lane_sanitizers & b=$!
wait $a
wait $b
rc=0
for f in "$logs_dir"/stage-*.rc; do
    [ "$(cat "$f")" = 0 ] || rc=1
done
say "all stages done"

logs="$logs_dir/testlog.json"
[ -f "$logs_dir/testlog-valgrind.json" ] && logs="$logs $logs_dir/testlog-valgrind.json"
[ -f build-asan/meson-logs/testlog.json ] && logs="$logs build-asan/meson-logs/testlog.json"
[ -f build-tsan/meson-logs/testlog.json ] && logs="$logs build-tsan/meson-logs/testlog.json"
# shellcheck disable=SC2086
FOXJIT_NOTES_FILE="$logs_dir/notes.txt" python3 tools/test-summary.py $logs || rc=1
exit $rc
