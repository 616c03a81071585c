#!/bin/sh
# Set-up command 2: install what is missing, build, and run every test suite
# (unit, compile, fault, scripts, gpu). Without a GPU the gpu suite is reported as
# skipped; FOXJIT_REQUIRE_GPU=1 makes that a failure. Extra arguments go to
# `meson test` (e.g. --suite unit).
#
# Then, when no arguments were given (or FOXJIT_EXTRA_CHECKS=1; =0 turns
# them off), the reliability checks of docs/reliability.md:
#   - an ASan+UBSan build (build-asan) running the unit and compile suites;
#   - a ThreadSanitizer build (build-tsan) running the trainer's threaded
#     host tests (train_model_host, _multi_host, _dist_host, _ring_host);
#   - valgrind memcheck over the unit suite of the normal build;
#   - the libFuzzer targets, FOXJIT_FUZZ_SECONDS (60) each, built with clang
#     in build-fuzz (tests/fuzz/run-fuzzers.sh).
# A check whose tool is missing (gcc's libasan, valgrind, clang with
# libFuzzer) is counted as skipped and says what to install; .ci/run
# installs them all.
#
# The last line is always "N passed, M failed, K skipped", counting every
# test of every run above (each fuzz target counts as one test), after a
# note with the fault-tolerance counts the tests printed.
set -eu
cd "$(dirname "$0")/.."
sh tools/install-deps.sh
cuda="${CUDA_HOME:-/usr/local/cuda}"
[ -f build/build.ninja ] || meson setup build -Dtoolkit="$cuda"
ninja -C build
rc=0
rm -f build/meson-logs/fuzz.txt
meson test -C build --print-errorlogs "$@" || rc=$?

extra=${FOXJIT_EXTRA_CHECKS:-}
[ -n "$extra" ] || { [ $# -eq 0 ] && extra=1 || extra=0; }
logs="build/meson-logs/testlog.json"
notes=""   # "name:passed|failed|skipped:why" entries for checks that are not meson runs
if [ "$extra" = 1 ]; then
    # Sanitizers abort on the first report, so any finding fails its test.
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1

    echo "=== ASan+UBSan build: unit and compile suites"
    if echo 'int main(void){return 0;}' | cc -fsanitize=address,undefined -x c - \
           -o /tmp/foxjit-asan-probe 2>/dev/null; then
        rm -f /tmp/foxjit-asan-probe
        [ -f build-asan/build.ninja ] ||
            meson setup build-asan -Dtoolkit="$cuda" -Db_sanitize=address,undefined \
                -Db_lundef=false >/dev/null
        rm -f build-asan/meson-logs/testlog.json
        # Ninja's progress goes to a log (a line per file would drown the
        # test output); its last lines are shown, all of them on failure.
        echo "building build-asan (about a minute on 2 cores; log: build-asan/ninja.log)"
        asan_t0=$(date +%s)
        if ninja -C build-asan > build-asan/ninja.log 2>&1; then
            echo "built build-asan in $(( $(date +%s) - asan_t0 )) s: $(tail -n 1 build-asan/ninja.log)"
            meson test -C build-asan --print-errorlogs --suite unit --suite compile || rc=1
            logs="$logs build-asan/meson-logs/testlog.json"
        else
            tail -n 40 build-asan/ninja.log
            notes="$notes asan-build:failed:the ASan+UBSan build failed (ninja -C build-asan)"
            rc=1
        fi
    else
        notes="$notes asan:skipped:no sanitizer runtime (apt-get install gcc libasan8 libubsan1)"
    fi

    echo "=== ThreadSanitizer build: the trainer's threaded host tests"
    # The data-parallel trainers run a thread per rank, the feed a packer
    # with helpers, the emulated driver and NCCL a world shared by them.
    if echo 'int main(void){return 0;}' | cc -fsanitize=thread -x c - \
           -o /tmp/foxjit-tsan-probe 2>/dev/null; then
        rm -f /tmp/foxjit-tsan-probe
        [ -f build-tsan/build.ninja ] ||
            meson setup build-tsan -Dtoolkit="$cuda" -Db_sanitize=thread \
                -Db_lundef=false >/dev/null
        rm -f build-tsan/meson-logs/testlog.json
        tsan_tests="train_model_host train_multi_host train_dist_host train_ring_host"
        tsan_targets=""
        for t in $tsan_tests; do tsan_targets="$tsan_targets tests/unit_$t"; done
        if ninja -C build-tsan $tsan_targets > build-tsan/ninja.log 2>&1; then
            # ThreadSanitizer runs them 5-10x slower (about 2 minutes in all
            # on 2 cores), hence the longer timeouts.
            TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
                meson test -C build-tsan --no-rebuild --print-errorlogs --suite unit \
                    --timeout-multiplier 5 $tsan_tests || rc=1
            logs="$logs build-tsan/meson-logs/testlog.json"
        else
            tail -n 40 build-tsan/ninja.log
            notes="$notes tsan-build:failed:the ThreadSanitizer build failed (ninja -C build-tsan)"
            rc=1
        fi
    else
        notes="$notes tsan:skipped:no ThreadSanitizer runtime (apt-get install gcc libtsan2)"
    fi

    echo "=== valgrind memcheck: unit suite"
    if command -v valgrind >/dev/null 2>&1; then
        rm -f build/meson-logs/testlog-valgrind.json
        # valgrind runs a program 20-50x slower (the trainer's threaded host
        # tests take about a minute under it), hence the longer timeouts.
        meson test -C build --print-errorlogs --suite unit --timeout-multiplier 5 \
            --wrapper 'valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --track-origins=yes --quiet' ||
            rc=1
        logs="$logs build/meson-logs/testlog-valgrind.json"
    else
        notes="$notes valgrind:skipped:valgrind is not installed (apt-get install valgrind)"
    fi

    echo "=== libFuzzer: ${FOXJIT_FUZZ_SECONDS:-60} s per target"
    probe=/tmp/foxjit-fuzz-probe
    if command -v clang >/dev/null 2>&1 &&
       printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' |
           clang -fsanitize=fuzzer,address,undefined -x c - -o $probe 2>/dev/null; then
        rm -f $probe
        fuzz_out=build/meson-logs/fuzz.txt
        if tests/fuzz/run-fuzzers.sh "${FOXJIT_FUZZ_SECONDS:-60}" build-fuzz >"$fuzz_out" 2>&1; then
            :
        else
            rc=1
        fi
        grep -v '^FOXJIT-COUNT' "$fuzz_out" || true
        for t in cache_entry manifest; do
            if grep -q "^fuzz_$t: .*: clean\$" "$fuzz_out"; then
                notes="$notes fuzz_$t:passed:"
            else
                notes="$notes fuzz_$t:failed:see $fuzz_out"
            fi
        done
    else
        notes="$notes fuzz:skipped:clang with libFuzzer is missing (apt-get install clang libclang-rt-14-dev)"
    fi
fi

# The closing note and one plain summary line over every log.
FOXJIT_NOTES="$notes" python3 - $logs <<'PY'
import json, os, re, sys
counts = {"OK": 0, "FAIL": 0, "SKIP": 0, "TIMEOUT": 0, "ERROR": 0, "EXPECTEDFAIL": 0,
          "UNEXPECTEDPASS": 0}
figures = {}
def gather(text):
    for name, value in re.findall(r"^FOXJIT-COUNT (\S+) (-?\d+)$", text or "", re.M):
        figures[name] = figures.get(name, 0) + int(value)
for path in sys.argv[1:]:
    if not os.path.exists(path):
        continue
    for line in open(path):
        line = line.strip()
        if line:
            r = json.loads(line)
            counts[r.get("result", "ERROR")] = counts.get(r.get("result", "ERROR"), 0) + 1
            if "valgrind" not in path and "build-asan" not in path and "build-tsan" not in path:
                gather(r.get("stdout"))
passed = counts["OK"] + counts["EXPECTEDFAIL"]
failed = counts["FAIL"] + counts["TIMEOUT"] + counts["ERROR"] + counts["UNEXPECTEDPASS"]
skipped = counts["SKIP"]
extra_lines = []
for note in os.environ.get("FOXJIT_NOTES", "").split(" "):
    if not note:
        continue
    name, state, why = (note.split(":", 2) + ["", ""])[:3]
    if state == "passed":
        passed += 1
    elif state == "failed":
        failed += 1
    else:
        skipped += 1
    if why:
        extra_lines.append("%s %s: %s" % (name, state, why))
fuzz_log = "build/meson-logs/fuzz.txt"
if os.path.exists(fuzz_log):
    gather(open(fuzz_log).read())
if figures:
    f = figures
    print("reliability: %d warm processes SIGKILLed (%d mid-write), %d torn entries loaded; "
          "%d concurrent writers; %d write faults injected (+%d through the JIT); "
          "%d corrupt entries rejected (+%d recompiled through the JIT); %d unsafe caches "
          "refused; fuzz executions: %d cache entry, %d manifest"
          % (f.get("kills", 0), f.get("kills_mid_write", 0), f.get("torn_entries_loaded", 0),
             f.get("concurrent_writers", 0), f.get("injected_write_faults", 0),
             f.get("jit_injected_faults", 0), f.get("corrupt_entries", 0),
             f.get("jit_corrupt_recompiled", 0), f.get("unsafe_refusals", 0),
             f.get("fuzz_execs_cache_entry", 0), f.get("fuzz_execs_manifest", 0)))
for line in extra_lines:
    print(line)
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
PY
exit $rc
