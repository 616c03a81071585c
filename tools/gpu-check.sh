#!/bin/bash
# Runs every GPU check and benchmark of a build on the local GPU and keeps
# the logs: the gpu suite (FOXJIT_REQUIRE_GPU=1), the unit and compile
# suites, a cold and a warm `fox-jit warm`, `fox-jit info` and `fox-jit
# bench`. Then the gpu suite and the bench again under each target override
# of FOXJIT_CHECK_TARGETS (default compute_89: the L40S's plans and code
# paths, as PTX the driver compiles for this GPU; "" for none). Used on a
# GPU machine with a build made elsewhere:
#   tools/gpu-check.sh BUILD_DIR OUT_DIR [bench groups...]
# Test binaries are run directly (no meson needed on the GPU machine).
# OUT_DIR gets checks.log, summary.txt (one block per pass), bench.txt and
# bench.json, and bench-<target>.txt/.json per override.
set -u
# The first pass is the GPU's own arch whatever the caller's environment.
unset FOXJIT_TARGET
targets=${FOXJIT_CHECK_TARGETS-compute_89}
B=$(cd "$1" && pwd); OUT=$2; shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
# FOXJIT_TEST_LIB_DIR: a directory of shared libraries the test programs
# need and the machine lacks (libcmocka.so.0 on a GPU host without the
# package), searched first.
if [ -n "${FOXJIT_TEST_LIB_DIR:-}" ]; then
    export LD_LIBRARY_PATH="$FOXJIT_TEST_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export FOXJIT_REQUIRE_GPU=1
export FOXJIT_CACHE_DIR=/tmp/foxjit-check-cache
rm -rf "$FOXJIT_CACHE_DIR"
LOG="$OUT/checks.log"
: > "$LOG"
summary=()
run() { # name command...
    local name=$1; shift
    local t0=$(date +%s.%N)
    echo "=== $name: $*" >> "$LOG"
    "$@" >> "$LOG" 2>&1
    local rc=$?
    local dt=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
    summary+=("$(printf '%-34s rc=%-3d %7.1f s' "$name" "$rc" "$dt")")
    echo "=== $name rc=$rc (${dt}s)" >> "$LOG"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >> "$LOG" 2>&1
run info "$B/tools/fox-jit" info --no-probe
run warm-cold "$B/tools/fox-jit" warm
run warm-again "$B/tools/fox-jit" warm
run verify "$B/tools/fox-jit" verify
run info-probe "$B/tools/fox-jit" info
# The unit suite as meson.build defines it: each test's arguments and
# environment from the build's meson-info (tools/meson-tests.py).
units=$(python3 "$here/tools/meson-tests.py" "$B" unit) || { echo "no unit tests found"; exit 1; }
while IFS=$'\t' read -r name cmd; do
    eval "run \"\$name\" $cmd"
done <<< "$units"
# The compile suite needs no GPU (CI runs it); FOXJIT_CHECK_COMPILE=0 skips it
# here when the GPU time is short.
[ "${FOXJIT_CHECK_COMPILE:-1}" = 0 ] || run compile_all "$B/tests/compile_all"
# The gpu suite runs FOXJIT_CHECK_JOBS programs at a time (default 4): they
# check results, not speed, and one at a time the two passes do not fit a
# 10-minute slot. Each program's output goes to its own file, appended to
# the log in program order when all are done; the benches run alone after.
jobs=${FOXJIT_CHECK_JOBS:-4}
# The gpu suite's C programs (gpu_*) as meson.build defines them, arguments
# and environment included; the suite's other tests (the bindings', the
# examples') need cargo or a venv and run in tools/gpu-bindings.sh.
gpu_tests=$(python3 "$here/tools/meson-tests.py" "$B" gpu | grep '^gpu_') ||
    { echo "no gpu tests found"; exit 1; }
gpu_suite() { # suffix: every gpu test program, named with the suffix
    local dir="$OUT/gpu$1" names=() n cmd
    rm -rf "$dir"; mkdir -p "$dir"
    while IFS=$'\t' read -r n cmd; do
        names+=("$n")
        while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
        (
            t0=$(date +%s.%N)
            eval "$cmd" > "$dir/$n.log" 2>&1
            echo "$? $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")" > "$dir/$n.rc"
        ) &
    done <<< "$gpu_tests"
    wait
    for n in "${names[@]}"; do
        read -r rc dt < "$dir/$n.rc" || { rc=255; dt=0; }
        { echo "=== $n$1"; cat "$dir/$n.log"; echo "=== $n$1 rc=$rc (${dt}s)"; } >> "$LOG"
        summary+=("$(printf '%-34s rc=%-3d %7.1f s' "$n$1" "$rc" "$dt")")
    done
    rm -rf "$dir"
}
bench_text() { # run name: that bench's table, from the log
    awk -v s="=== $1: " -v e="=== $1 rc=" 'index($0, s) == 1 {on = 1; next}
        index($0, e) == 1 {on = 0} on' "$LOG"
}
gpu_suite ""
run bench "$B/tools/fox-jit" bench --json "$OUT/bench.json" "$@"
bench_text bench > "$OUT/bench.txt"
pass_summary() { # title first last: a block of summary lines with its count
    local title=$1 first=$2 last=$3 bad=0 n=0
    for ((i = first; i < last; i++)); do
        n=$((n + 1))
        case "${summary[$i]}" in *"rc=0 "*|*"rc=77 "*) ;; *) bad=$((bad + 1));; esac
    done
    printf '== %s: %d checks, %d failed\n' "$title" "$n" "$bad"
    for ((i = first; i < last; i++)); do printf '%s\n' "${summary[$i]}"; done
}
blocks=()
blocks+=("native (the GPU's own arch)|0|${#summary[@]}")
# The same suite under each override: the plans, kernels and cache entries
# of that arch. Results must match the float64 references as natively; the
# gpu_target_paths test also compares the two paths' outputs.
for target in $targets; do
    first=${#summary[@]}
    export FOXJIT_TARGET=$target
    run "info-probe@$target" "$B/tools/fox-jit" info
    run "warm@$target" "$B/tools/fox-jit" warm --arch "$target"
    gpu_suite "@$target"
    run "bench@$target" "$B/tools/fox-jit" bench --json "$OUT/bench-$target.json" "$@"
    bench_text "bench@$target" > "$OUT/bench-$target.txt"
    unset FOXJIT_TARGET
    blocks+=("FOXJIT_TARGET=$target|$first|${#summary[@]}")
done
for blk in "${blocks[@]}"; do
    IFS='|' read -r title first last <<< "$blk"
    pass_summary "$title" "$first" "$last"
done | tee "$OUT/summary.txt"
