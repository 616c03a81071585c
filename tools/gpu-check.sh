#!/bin/bash
# Runs every GPU check and benchmark of a build on the local GPU and keeps
# the logs: the gpu suite (FOXJIT_REQUIRE_GPU=1), the unit and compile
# suites, a cold and a warm `fox-jit warm`, `fox-jit info` and `fox-jit
# bench`. Used on the lent H200 with a build made elsewhere:
#   tools/gpu-check.sh BUILD_DIR OUT_DIR [bench groups...]
# Test binaries are run directly (no meson needed on the GPU machine).
set -u
B=$(cd "$1" && pwd); OUT=$2; shift 2
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/.." && pwd)
export LD_LIBRARY_PATH="$here/.carry/lib:${LD_LIBRARY_PATH:-}"
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
    summary+=("$(printf '%-28s rc=%-3d %7.1f s' "$name" "$rc" "$dt")")
    echo "=== $name rc=$rc (${dt}s)" >> "$LOG"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >> "$LOG" 2>&1
run info "$B/tools/fox-jit" info --no-probe
run warm-cold "$B/tools/fox-jit" warm
run warm-again "$B/tools/fox-jit" warm
run verify "$B/tools/fox-jit" verify
run info-probe "$B/tools/fox-jit" info
for t in "$B"/tests/unit_* ; do
    case "$t" in *.p) continue;; esac
    if [ "$(basename "$t")" = unit_plugin ]; then
        run "$(basename "$t")" env FOXJIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1 "$t" "$B/runtime/libfoxjit.so"
    elif [ "$(basename "$t")" = unit_train_nogpu ] || [ "$(basename "$t")" = unit_train_nccl ]; then
        run "$(basename "$t")" "$t" "$B/tools/fox-train/fox-train" "$B/runtime/libfoxjit.so"
    elif [ "$(basename "$t")" = unit_missing_nvrtc ]; then
        run "$(basename "$t")" env FOXJIT_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13 "$t"
    else
        run "$(basename "$t")" "$t"
    fi
done
run compile_all "$B/tests/compile_all"
for t in "$B"/tests/gpu_* ; do
    case "$t" in *.p) continue;; esac
    if [ "$(basename "$t")" = gpu_trainer ] || [ "$(basename "$t")" = gpu_trainer_multi_gpu ]; then
        run "$(basename "$t")" "$t" "$B/tools/fox-train/fox-train" "$B/runtime/libfoxjit.so"
    else
        run "$(basename "$t")" "$t"
    fi
done
run bench "$B/tools/fox-jit" bench --json "$OUT/bench.json" "$@"
grep -v '^===' "$LOG" | sed -n '/fox-jit bench on/,$p' > "$OUT/bench.txt"
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
